"""The drain plan (core/maintenance.py): every instance leaves, nothing else moves, the
constraints hold, and an instance that cannot leave blocks the drain and is named."""

from __future__ import annotations

import pytest

from consolidator.core.constraints import Rules
from consolidator.core.errors import UsageError
from consolidator.core.maintenance import (
    DrainBlocked,
    DrainSettings,
    drain_draft,
    drain_reason,
    drained_by,
)
from consolidator.core.model import ServerGroup
from tests.unit.builders import cluster, hosts, vm

RULES = DrainSettings(rules=Rules())


def four_hosts() -> tuple:
    return hosts(("h1", 8, 16384), ("h2", 8, 16384), ("h3", 8, 16384), ("h4", 8, 16384))


def test_every_instance_leaves_and_nothing_else_moves() -> None:
    vms = [vm(f"a{n}", "h1", 2, 2048) for n in range(3)] + [vm("b", "h2", 4, 4096),
                                                             vm("c", "h3", 1, 1024)]
    c = cluster(four_hosts(), vms)
    draft = drain_draft(c, ["h1"], DrainSettings(rules=Rules(), per_host_limit=2,
                                                 power_off=True))
    assert sorted(m.instance_name for m in draft.migrations) == ["a0", "a1", "a2"]
    assert {m.source for m in draft.migrations} == {"h1"}
    assert "h1" not in {m.destination for m in draft.migrations}
    assert max(m.wave for m in draft.migrations) == 2          # the per-host limit
    assert draft.drain == ("h1",) and draft.power_off == ("h1",)
    assert draft.algorithm == "drain-hosts"
    kept_on = drain_draft(c, ["h1"], RULES)
    assert kept_on.power_off == () and kept_on.drain == ("h1",)


def test_zones_capacity_and_anti_affinity_choose_the_destination() -> None:
    hs = hosts(("h1", 8, 16384), ("h2", 8, 16384), availability_zone="z1") + \
        hosts(("h3", 64, 65536), availability_zone="z2") + hosts(("h4", 8, 16384),
                                                                 availability_zone="z1")
    vms = [vm("a", "h1", 2, 2048), vm("b", "h1", 2, 2048), vm("peer", "h2", 1, 1024)]
    group = ServerGroup(name="g", policy="anti-affinity", members=(vms[0].id, vms[2].id))
    draft = drain_draft(cluster(hs, vms, (group,)), ["h1"], RULES)
    dest = {m.instance_name: m.destination for m in draft.migrations}
    assert dest["a"] == "h4" and dest["b"] in ("h2", "h4")


def test_an_unmovable_instance_blocks_the_drain_and_is_named() -> None:
    vms = [vm("pinned", "h1", metadata={"consolidator:exclude": "true"}),
           vm("pal-1", "h1"), vm("pal-2", "h1"), vm("free", "h1"),
           vm("other", "h2", project_id="p-kept"), vm("huge", "h2", 8, 8192),
           vm("f3", "h3"), vm("f4", "h4")]
    group = ServerGroup(name="pals", policy="affinity", members=(vms[1].id, vms[2].id))
    c = cluster(four_hosts(), vms, (group,))
    with pytest.raises(DrainBlocked) as info:
        drain_draft(c, ["h1"], RULES)
    assert set(info.value.unmovable) == {"pinned", "pal-1", "pal-2"}
    assert "pinned: consolidator:exclude=true" in str(info.value)
    assert "nothing moves" in str(info.value)
    with pytest.raises(DrainBlocked) as info:
        drain_draft(c, ["h2"], DrainSettings(rules=Rules(excluded_projects=frozenset(
            {"p-kept"}))))
    assert set(info.value.unmovable) == {"other", "huge"}
    assert "no room" in info.value.unmovable["huge"]


def test_hosts_that_cannot_be_drained_are_refused() -> None:
    c = cluster(four_hosts(), [vm("a", "h1")])
    with pytest.raises(UsageError, match="no compute host is named 'h9'"):
        drain_draft(c, ["h9"], RULES)
    with pytest.raises(UsageError, match="h1 cannot be drained: it is excluded by config"):
        drain_draft(c, ["h1"], DrainSettings(rules=Rules(excluded_hosts=("h1",))))
    moved = drain_draft(c, ["h1"], DrainSettings(rules=Rules(excluded_hosts=("h2", "h3"))))
    assert [m.destination for m in moved.migrations] == ["h4"]


def test_the_drain_reason_names_the_plan() -> None:
    reason = drain_reason("1234-abcd")
    assert reason.startswith("consolidator: drained by plan 1234-abcd")
    assert drained_by(reason) == "1234-abcd"
    assert drained_by("consolidator: emptied by plan x for power-off") is None
    assert drained_by(None) is None and drained_by("DIMM errors") is None


def test_the_emptying_reason_names_the_plan() -> None:
    from consolidator.core.rollback_plan import emptied_by, emptying_reason, is_ours

    reason = emptying_reason("1234-abcd")
    assert reason == "consolidator: emptied by plan 1234-abcd for power-off"
    assert is_ours(reason) and emptied_by(reason) == "1234-abcd"
    assert drained_by(reason) is None and emptied_by(drain_reason("1234-abcd")) is None
    assert emptied_by(None) is None and emptied_by("consolidator: emptied by plan  for "
                                                   "power-off") is None


def test_the_hosts_a_drain_request_means() -> None:
    from consolidator.app.drain_hosts import DrainRequest, drain_hosts_of

    hs = hosts(("h1", 8, 16384), ("h2", 8, 16384)) + \
        hosts(("h3", 8, 16384), ("h4", 8, 16384), aggregates=("freepool",))
    c = cluster(hs, [vm("a", "h1")])
    assert drain_hosts_of(c, DrainRequest(aggregate="freepool")) == ["h3", "h4"]
    assert drain_hosts_of(c, DrainRequest(hosts=("h4", "h1"), aggregate="freepool")) == \
        ["h4", "h1", "h3"]
    with pytest.raises(UsageError, match="no compute host is in the aggregate 'gpu'"):
        drain_hosts_of(c, DrainRequest(aggregate="gpu"))
    with pytest.raises(UsageError, match="no compute host is named 'h9'"):
        drain_hosts_of(c, DrainRequest(hosts=("h9",)))
