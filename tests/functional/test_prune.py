"""consolidator db prune and [database] keep_days (issue 27: nothing pruned snapshots, plans
or journal rows; a cycle adds about 26 KB)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from sqlalchemy import select, update

from consolidator.core.plan import PlanDraft
from consolidator.store import journal
from consolidator.store.db import make_engine
from consolidator.store.plans import save_plan, set_status
from consolidator.store.snapshots import save_snapshot
from consolidator.store.tables import journal as journal_table
from consolidator.store.tables import plans, snapshots
from tests.functional.cli import run
from tests.unit.builders import cluster, hosts, vm

OLD = datetime.now(timezone.utc) - timedelta(days=40)


def draft(algorithm: str = "firstfit", **options: str) -> PlanDraft:
    return PlanDraft(algorithm=algorithm, ranking=None, migrations=(), power_off=(),
                     hosts_before=2, hosts_after=1, lower_bound=1, migrations_lower_bound=0,
                     spare=0, options=options)


def history(db_url: str) -> dict[str, str]:
    """Old snapshots and plans of every kind, and one new snapshot; name -> id."""
    engine = make_engine(db_url)
    c = cluster(hosts(("c1", 8, 8192), ("c2", 8, 8192)), [vm("v", "c2")])
    ids = {name: save_snapshot(engine, c, cloud="lab", source="t", taken_at=OLD).info.id
           for name in ("a", "b", "c", "d", "e")}
    def ran(plan_id: str) -> str:
        for status in ("approved", "running", "succeeded"):
            set_status(engine, plan_id, status, supersede=False)
        return plan_id

    ids["p_done"] = ran(save_plan(engine, draft(), cloud="lab", snapshot_id=ids["a"]).id)
    ids["p_gone"] = save_plan(engine, draft(), cloud="lab", snapshot_id=ids["b"]).id
    set_status(engine, ids["p_gone"], "cancelled")
    ids["p_live"] = save_plan(engine, draft(), cloud="lab", snapshot_id=ids["c"]).id
    set_status(engine, ids["p_live"], "approved", supersede=False)
    ids["rollback"] = ran(save_plan(engine, draft("rollback", target_snapshot=ids["e"]),
                                    cloud="lab", snapshot_id=ids["d"]).id)
    for action, target in (("migrate", "v"), ("power_off", "c2")):
        journal.record(engine, cloud="lab", plan_id=ids["p_done"], action=action,
                       target=target, state=journal.SUCCEEDED, result="done")
    with engine.begin() as conn:
        conn.execute(update(plans).values(created_at=OLD))
        conn.execute(update(journal_table).values(created_at=OLD))
    ids["new"] = save_snapshot(engine, c, cloud="lab", source="t").info.id
    engine.dispose()
    return ids


def test_prune_removes_only_what_nothing_needs(db_url: str, tmp_path: Path) -> None:
    ids = history(db_url)
    dry = run("db", "prune", "--keep-days", "30", "--dry-run", db_url=db_url)
    assert dry.code == 0, dry.err
    assert dry.out.strip() == ("would remove 3 snapshots, 2 plans and 1 journal row older "
                               "than 30 days")
    config = tmp_path / "c.conf"
    config.write_text("[database]\nkeep_days = 30\n")
    done = run("--config", str(config), "db", "prune", db_url=db_url)
    assert done.out.strip() == "removed 3 snapshots, 2 plans and 1 journal row older than 30 days"
    engine = make_engine(db_url)
    with engine.connect() as conn:
        left_snaps = set(conn.execute(select(snapshots.c.id)).scalars())
        left_plans = set(conn.execute(select(plans.c.id)).scalars())
        left_rows = [(r.action, r.target) for r in conn.execute(select(journal_table))]
    engine.dispose()
    name = {v: k for k, v in ids.items()}
    # the plan whose power-off rollback still reads, its snapshot; the live plan and its
    # snapshot; the newest snapshot
    assert sorted(name[s] for s in left_snaps) == ["a", "c", "new"]
    assert sorted(name[p] for p in left_plans) == ["p_done", "p_live"]
    assert left_rows == [("power_off", "c2")]
    again = run("db", "prune", "--keep-days", "30", db_url=db_url)
    assert again.out.strip() == ("removed 0 snapshots, 0 plans and 0 journal rows older "
                                 "than 30 days")


def test_prune_needs_a_retention(db_url: str) -> None:
    refused = run("db", "prune", db_url=db_url)
    assert refused.code == 2
    assert refused.err.strip() == ("consolidator: error: no retention: give --keep-days N or "
                                   "set [database] keep_days")
