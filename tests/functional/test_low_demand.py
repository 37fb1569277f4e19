"""Power-off waits for low demand sustained over a window (issue 14): every demand sample of
the window must be low, not one; otherwise the hosts are emptied and left on, journaled."""

from __future__ import annotations

import dataclasses
from datetime import datetime, timedelta, timezone

import pytest

from consolidator.store import journal
from consolidator.store.snapshots import load_snapshot, save_snapshot
from tests.functional.test_executor import Bed, bed  # noqa: F401 - the fixture

#: Five hosts of 16 vCPUs, ten instances: 0.5 vCPU each is 6 % demand, 6 vCPUs each 75 %.
LOW, HIGH = 0.5, 6.0


def record_demand(testbed: Bed, samples: list[tuple[float, float]]) -> None:
    """Snapshots of the cloud with usage statistics, (minutes ago, cpu_mean per instance)."""
    snap = load_snapshot(testbed.engine, testbed.snapshot_id)
    now = datetime.now(timezone.utc)
    for minutes_ago, mean in samples:
        cluster = dataclasses.replace(snap.cluster, instances=tuple(
            dataclasses.replace(i, usage={"cpu_mean": mean, "cpu_std": 0.0})
            for i in snap.cluster.instances))
        save_snapshot(testbed.engine, cluster, cloud=snap.info.cloud, source="test",
                      taken_at=now - timedelta(minutes=minutes_ago))


def test_low_demand_over_the_whole_window_lets_hosts_power_off(bed: Bed) -> None:  # noqa: F811
    plan = bed.plan()
    record_demand(bed, [(40, LOW), (20, LOW), (5, LOW)])
    outcome = bed.run(plan, low_demand_window=30, low_demand_threshold=0.5)
    assert outcome.ok, outcome
    assert sorted(outcome.powered_off) == ["c3", "c4", "c5"]
    bed.assert_safe()


@pytest.mark.parametrize(("samples", "why"), [
    ([(40, LOW), (20, HIGH), (5, LOW)], "demand 75% at"),     # one high sample in the window
    ([(40, HIGH), (20, LOW), (5, LOW)], "demand 75% at"),     # high when the window began
    ([(20, LOW), (5, LOW)], "no demand sample from before"),  # the window is not covered
])
def test_demand_not_low_all_window_leaves_emptied_hosts_on(
        bed: Bed, samples: list[tuple[float, float]], why: str) -> None:  # noqa: F811
    plan = bed.plan()
    record_demand(bed, samples)
    outcome = bed.run(plan, low_demand_window=30, low_demand_threshold=0.5)
    assert outcome.powered_off == [] and not outcome.failed
    assert len(outcome.migrated) == len(plan.draft.migrations)      # emptied all the same
    for host in ("c3", "c4", "c5"):
        assert why in outcome.left_on[host] and "emptied and left on" in outcome.left_on[host]
        assert bed.cloud.power(host) == "on"
        assert not bed.cloud.cluster().instances_on(host)
    services = {s.host: s for s in bed.cloud.connect().compute.services()}
    assert all(services[h].status == "enabled" for h in ("c3", "c4", "c5"))
    rows = [(e.action, e.target, e.state, e.result) for e in
            journal.entries(bed.engine, plan_id=plan.id) if e.action != "migrate"]
    assert [(a, t, s) for a, t, s, _ in rows] == [
        ("power_off", h, journal.SKIPPED) for h in plan.draft.power_off]
    assert all(why in r for *_, r in rows)
    bed.assert_safe()
