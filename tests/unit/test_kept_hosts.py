"""A plan empties a host it keeps on only when it needs it empty; without a BMC file it is a
migrate-only plan that says so (issue 27: plans tell the truth about power)."""

from __future__ import annotations

from pathlib import Path

from consolidator.core.planner import MIGRATE_ONLY, PlanSettings, plan_cluster
from consolidator.scenario.files import load_cluster
from tests.unit.builders import cluster, hosts, vm

BUNDLED = Path(__file__).resolve().parents[2] / "consolidator" / "data" / "alto-cloud.yaml"


def three_hosts() -> object:
    return cluster(hosts(("c1", 8, 8192), ("c2", 8, 8192), ("c3", 8, 8192)),
                   [vm("a", "c1", 2), vm("b", "c2", 2), vm("c", "c3", 2)])


def test_the_n_plus_one_host_keeps_its_instances() -> None:
    """firstfit empties c2 and c3 into c1; N+1 keeps one of them on: that one is not emptied
    (one migration, not two), and the plan says why."""
    plan = plan_cluster(three_hosts(), "firstfit")
    assert len(plan.power_off) == 1 and plan.hosts_after == 2
    assert len(plan.migrations) == 1
    assert {m.source for m in plan.migrations} == set(plan.power_off)
    assert any(n.startswith("not emptied, as it stays on anyway") for n in plan.notes)


def test_a_host_without_a_bmc_entry_is_not_emptied_for_nothing() -> None:
    plan = plan_cluster(three_hosts(), "firstfit", settings=PlanSettings(n_plus_one=False),
                        no_bmc=("c3",))
    assert plan.power_off == ("c2",)
    assert [(m.instance_name, m.destination) for m in plan.migrations] == [("b", "c1")]
    assert not plan.left_on


def test_without_a_bmc_file_the_plan_is_migrate_only_and_says_so() -> None:
    plan = plan_cluster(three_hosts(), "firstfit",
                        settings=PlanSettings(n_plus_one=False, migrate_only=True))
    assert plan.power_off == () and plan.hosts_after == plan.hosts_before == 3
    assert plan.left_on == {"c2": MIGRATE_ONLY, "c3": MIGRATE_ONLY}
    assert len(plan.migrations) == 2
    assert any(n.startswith("migrate-only plan: no BMC file") for n in plan.notes)


def test_the_bundled_cloud_reaches_5_hosts_without_emptying_its_n_plus_one_spare() -> None:
    """hvp and importance-3d emptied compute-01 (107 migrations) and then kept it on."""
    bundled = load_cluster(BUNDLED)
    for algorithm in ("hvp", "importance-3d"):
        plan = plan_cluster(bundled, algorithm)
        assert plan.hosts_after == 5, algorithm
        assert len(plan.migrations) < 107, algorithm
        assert "compute-01" not in {m.source for m in plan.migrations}, algorithm
