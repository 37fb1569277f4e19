"""Relief (core/relief.py): which hosts usage overloads, what moves, where, what powers on."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from consolidator.core.constraints import UsageModel, build_problem
from consolidator.core.cpu_speed import host_speeds
from consolidator.core.model import Host
from consolidator.core.planner import PlanSettings
from consolidator.core.relief import overloads, power_on_order, relief_draft
from consolidator.core.rollback_plan import OUR_REASON
from tests.unit.builders import cluster, hosts, vm

UCAC = UsageModel(confidence=0.99)


def busy(name: str, host: str, mean: float, std: float = 0.0, memory_mb: int = 1024,
         vcpus: int = 2) -> object:
    return vm(name, host, vcpus=vcpus, memory_mb=memory_mb,
              usage={"cpu_mean": mean, "cpu_std": std})


def ucac_after(c: object, usage: UsageModel = UCAC) -> dict[str, float]:
    """Each host's UCaC at the model's confidence, from a fresh problem."""
    problem = build_problem(c, usage=usage)
    z = 2.3263478740408408
    mu = np.bincount(problem.placement, weights=problem.usage_mean,
                     minlength=problem.n_hosts)
    var = np.bincount(problem.placement, weights=problem.usage_std ** 2,
                      minlength=problem.n_hosts)
    return {h.name: float(mu[k] + z * np.sqrt(var[k])) for k, h in enumerate(c.hosts)}


def test_an_overloaded_host_sheds_the_single_smallest_instance_that_ends_it() -> None:
    # c1: 4 cores, usage 3 + 1.5 + 0.6 = 5.1: dropping vm-b (1.5, 8 GB) or vm-a (3, 2 GB)
    # each ends it; vm-a has less memory, so it goes, alone.
    c = cluster(hosts(("c1", 4, 65536), ("c2", 8, 65536), cpu_allocation_ratio=4.0),
                [busy("vm-a", "c1", 3.0, memory_mb=2048), busy("vm-b", "c1", 1.5, memory_mb=8192),
                 busy("vm-c", "c1", 0.6, memory_mb=1024), busy("vm-d", "c2", 1.0)])
    found = overloads(c, UCAC)
    assert [o.host for o in found] == ["c1"] and found[0].cpu
    draft, relief = relief_draft(c, PlanSettings(usage=UCAC))
    assert [(m.instance_name, m.source, m.destination) for m in draft.migrations] == \
        [("vm-a", "c1", "c2")]
    assert not relief.unresolved and draft.power_on == ()
    after = ucac_after(relief.cluster.__class__(
        hosts=relief.cluster.hosts,
        instances=tuple(replace(i, host="c2") if i.name == "vm-a" else i
                        for i in relief.cluster.instances)))
    assert all(after[h.name] <= h.vcpus + 1e-9 for h in c.hosts)


def test_without_room_the_most_efficient_host_consolidator_powered_off_comes_on() -> None:
    off = dict(power="off", state="down", status="disabled",
               disabled_reason=f"{OUR_REASON} plan x")
    c = cluster((Host("c1", 4, 65536, 100, cpu_allocation_ratio=4.0),
                 Host("c2", 4, 65536, 100, cpu_allocation_ratio=4.0),
                 Host("big", 16, 65536, 100, peak_watts=400, **off),
                 Host("lean", 8, 65536, 100, peak_watts=150, **off),
                 Host("admin", 32, 65536, 100, power="off", state="down",
                      status="disabled", disabled_reason="DIMM errors")),
                [busy("vm-a", "c1", 3.0), busy("vm-b", "c1", 2.5), busy("vm-c", "c2", 3.9)])
    order = power_on_order(c)
    assert order == ["lean", "big"]          # 8/150 > 16/400; the operator's host never
    draft, relief = relief_draft(c, PlanSettings(usage=UCAC), power_on=order)
    assert draft.power_on == ("lean",)
    assert [(m.instance_name, m.destination) for m in draft.migrations] == [("vm-b", "lean")]
    assert not relief.unresolved


def test_a_host_nothing_can_relieve_is_reported_not_moved_in_vain() -> None:
    c = cluster(hosts(("c1", 2, 65536), ("c2", 2, 65536), cpu_allocation_ratio=4.0),
                [busy("vm-a", "c1", 1.8), busy("vm-b", "c1", 1.8), busy("vm-c", "c2", 1.9)])
    draft, relief = relief_draft(c, PlanSettings(usage=UCAC))
    assert relief.unresolved == ("c1",)
    assert draft.migrations == ()
    assert any("still overloaded" in n and "c1" in n for n in draft.notes)


def test_memory_short_hosts_are_relieved_too() -> None:
    c = cluster(hosts(("c1", 8, 8192), ("c2", 8, 16384), ram_allocation_ratio=1.5),
                [busy("vm-a", "c1", 0.1, memory_mb=6144), busy("vm-b", "c1", 0.1, memory_mb=4096),
                 busy("vm-c", "c2", 0.1, memory_mb=1024)])
    found = overloads(c, UCAC)
    assert [o.host for o in found] == ["c1"] and found[0].memory and not found[0].cpu
    draft, _ = relief_draft(c, PlanSettings(usage=UCAC))
    assert [m.instance_name for m in draft.migrations] == ["vm-b"]   # the smaller one


def test_the_fewest_moves_when_no_single_instance_is_enough() -> None:
    c = cluster(hosts(("c1", 4, 65536), ("c2", 8, 65536), ("c3", 8, 65536),
                      cpu_allocation_ratio=4.0),
                [busy(f"vm-{k}", "c1", 1.0) for k in range(7)]
                + [busy("big", "c1", 2.0, memory_mb=16384)])
    draft, relief = relief_draft(c, PlanSettings(usage=UCAC))
    # usage 9 on 4 cores: 5 must go; taking "big" (2) first needs 4 moves, not 5.
    assert len(draft.migrations) == 4 and not relief.unresolved
    assert "big" in {m.instance_name for m in draft.migrations}


def test_hard_anti_affinity_and_pinned_instances_are_honoured() -> None:
    from consolidator.core.model import ServerGroup

    a = busy("vm-a", "c1", 2.5, memory_mb=512)
    b = busy("vm-b", "c1", 2.0)
    c2 = busy("vm-c", "c2", 0.5)
    group = ServerGroup("g", "anti-affinity", (a.id, c2.id))
    c = cluster(hosts(("c1", 4, 65536), ("c2", 8, 65536), ("c3", 8, 65536),
                      cpu_allocation_ratio=4.0), [a, b, c2], (group,))
    draft, _ = relief_draft(c, PlanSettings(usage=UCAC))
    assert [(m.instance_name, m.destination) for m in draft.migrations] == [("vm-a", "c3")]


def test_max_moves_caps_relief() -> None:
    c = cluster(hosts(("c1", 4, 65536), ("c2", 16, 65536), cpu_allocation_ratio=4.0),
                [busy(f"vm-{k}", "c1", 1.0) for k in range(8)])
    draft, relief = relief_draft(c, PlanSettings(usage=UCAC), max_moves=2)
    assert len(draft.migrations) == 2 and relief.unresolved == ("c1",)


def test_cpu_speed_scales_usage_measured_on_one_host_for_another() -> None:
    # vm-b uses 2.5 cores of c1 (speed 1): too much for c2's 2 cores, unless they are twice
    # as fast, when it uses 1.25 of them.
    c = cluster(hosts(("c1", 4, 65536), ("c2", 2, 65536), cpu_allocation_ratio=4.0),
                [busy("vm-a", "c1", 3.0), busy("vm-b", "c1", 2.5)])
    slow = UsageModel(confidence=0.99)
    assert relief_draft(c, PlanSettings(usage=slow))[1].unresolved == ("c1",)
    fast = UsageModel(confidence=0.99, speed={"c2": 2.0})
    draft, relief = relief_draft(c, PlanSettings(usage=fast))
    assert [(m.instance_name, m.destination) for m in draft.migrations] == [("vm-b", "c2")]
    assert not relief.unresolved


def test_host_speeds_from_globs_aggregates_and_the_default() -> None:
    c = cluster((Host("gpu-1", 4, 1024, 10), Host("c1", 4, 1024, 10, aggregates=("fast",)),
                 Host("c2", 4, 1024, 10)), [])
    speeds = host_speeds(c, {"default": "0.8", "aggregate:fast": "1.5", "gpu-*": "2"},
                         scenario={"c2": 1.1})
    assert speeds.tolist() == [2.0, 1.5, 1.1]
    with pytest.raises(ValueError, match="positive number"):
        host_speeds(c, {"default": "fast"})


def test_a_scenario_host_s_own_speed_wins_over_the_config_s() -> None:
    from consolidator.core.cpu_speed import speed_map
    from consolidator.scenario.files import parse_scenario

    c = parse_scenario({"hosts": [{"name": "c1", "vcpus": 4, "memory_mb": 1024, "disk_gb": 10,
                                   "cpu_speed": 2.0},
                                  {"name": "c2", "vcpus": 4, "memory_mb": 1024,
                                   "disk_gb": 10}]}).cluster
    assert speed_map(c, {"default": "1.5"}) == {"c1": 2.0, "c2": 1.5}
    assert speed_map(c, {}) == {"c1": 2.0, "c2": 1.0}
    # and the planner's problem scales by it without any config
    busy_c = cluster(c.hosts, [busy("vm-a", "c1", 3.0)])
    problem = build_problem(busy_c, usage=UCAC)
    assert problem.usage_mean.tolist() == [6.0] and problem.cpu_limit.tolist() == [8.0, 4.0]
    with pytest.raises(Exception, match="cpu_speed must be a positive number"):
        Host("c3", 4, 1024, 10, cpu_speed=0)


def test_relief_windows_in_replay_steps_come_from_the_queries() -> None:
    from consolidator.app.replay import window_steps

    assert window_steps("avg_over_time(x[10m])", 300, 600) == 2
    assert window_steps("stddev_over_time(x[1h])", 300, 600) == 12
    assert window_steps("x", 300, 3600) == 12
    assert window_steps("avg_over_time(x[30s])", 300, 600) == 1


def test_a_trigger_confidence_relieves_only_hosts_over_it_and_brings_them_under_the_planners(
        ) -> None:
    """Hysteresis ([relief] trigger_confidence): c1 (mean 3.2, std 0.4 on 4 cores: over at
    0.99, under at 0.9) is left alone with a trigger of 0.9; c2 (mean 3.8, std 0.4: over at
    both) is relieved until it is under its cores at 0.99."""
    c = cluster(hosts(("c1", 4, 65536), ("c2", 4, 65536), ("c3", 8, 65536),
                      cpu_allocation_ratio=4.0),
                [busy("a1", "c1", 1.6, 0.3), busy("a2", "c1", 1.6, 0.3),
                 busy("b1", "c2", 1.9, 0.3), busy("b2", "c2", 1.9, 0.3)])
    assert {o.host for o in overloads(c, UCAC)} == {"c1", "c2"}
    draft, relief = relief_draft(c, PlanSettings(usage=UCAC), trigger=0.9)
    assert {m.source for m in draft.migrations} == {"c2"}
    moved = {m.instance_name: m.destination for m in draft.migrations}
    after = ucac_after(relief.cluster.__class__(
        hosts=relief.cluster.hosts,
        instances=tuple(replace(i, host=moved.get(i.name, i.host))
                        for i in relief.cluster.instances)))
    assert after["c2"] <= 4 + 1e-9 and after["c1"] > 4
