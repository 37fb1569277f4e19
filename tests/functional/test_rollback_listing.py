"""A rollback plan in 'plans list' shows no lower bound: it has none to meet."""

from __future__ import annotations

from consolidator.core.plan import PlanDraft
from consolidator.store.db import make_engine
from consolidator.store.plans import save_plan
from consolidator.store.snapshots import save_snapshot
from tests.functional.cli import run
from tests.unit.builders import cluster, hosts, vm


def test_plans_list_gives_a_rollback_plan_no_lower_bound(db_url: str) -> None:
    engine = make_engine(db_url)
    snap = save_snapshot(engine, cluster(hosts(("a", 8, 8192), ("b", 8, 8192)), [vm("v", "a")]),
                         cloud="lab", source="test").info.id
    for algorithm, bound in (("firstfit", 1), ("rollback", 0)):
        save_plan(engine, PlanDraft(algorithm=algorithm, ranking=None, migrations=(),
                                    power_off=(), hosts_before=1, hosts_after=2,
                                    lower_bound=bound, migrations_lower_bound=0, spare=0),
                  cloud="lab", snapshot_id=snap)
    engine.dispose()
    # LOWER BOUND is one of the --long columns; -c shows it as well
    listed = run("plans", "list", "-c", "ASKED", "-c", "LOWER BOUND", db_url=db_url)
    assert listed.code == 0, listed.err
    rows = {line.split()[0]: line.split() for line in listed.out.splitlines()[2:]}
    assert rows["firstfit"][-1] == "1" and rows["rollback"][-1] == "-", listed.out
