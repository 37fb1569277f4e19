"""consolidator journal: plan, host and operator columns; --host, --since and --action
filters; the listing options (issue 27: it had no such column and no filter but --plan)."""

from __future__ import annotations

import getpass
import json
import socket
from datetime import datetime, timedelta, timezone

from sqlalchemy import update

from consolidator.core.plan import Move, PlanDraft
from consolidator.store import journal
from consolidator.store.db import make_engine
from consolidator.store.plans import save_plan
from consolidator.store.snapshots import save_snapshot
from consolidator.store.tables import journal as journal_table
from tests.functional.cli import run
from tests.unit.builders import cluster, hosts, vm


def fill(db_url: str) -> str:
    """Two plans' rows: a migration c2 -> c1, c2 disabled and powered off; an older power-on
    of c3. Returns the first plan's id."""
    engine = make_engine(db_url)
    snap = save_snapshot(engine, cluster(hosts(("c1", 8, 8192), ("c2", 8, 8192),
                                               ("c3", 8, 8192)), [vm("v", "c2")]),
                         cloud="lab", source="test").info.id
    draft = PlanDraft(algorithm="firstfit", ranking=None,
                      migrations=(Move("id-v", "v", "c2", "c1", 1),), power_off=("c2",),
                      hosts_before=3, hosts_after=2, lower_bound=1, migrations_lower_bound=1,
                      spare=0)
    first = save_plan(engine, draft, cloud="lab", snapshot_id=snap).id
    second = save_plan(engine, draft, cloud="lab", snapshot_id=snap).id
    old = journal.record(engine, cloud="lab", plan_id=second, action="power_on", target="c3",
                         state=journal.SUCCEEDED, result="on")
    with engine.begin() as conn:   # two days ago
        conn.execute(update(journal_table).where(journal_table.c.id == old).values(
            created_at=datetime.now(timezone.utc) - timedelta(days=2)))
    journal.record(engine, cloud="lab", plan_id=first, action="migrate", target="id-v",
                   params={"instance": "v", "source": "c2", "destination": "c1"},
                   state=journal.SUCCEEDED, result="ACTIVE on c1")
    for action in ("disable", "power_off"):
        journal.record(engine, cloud="lab", plan_id=first, action=action, target="c2",
                       state=journal.SUCCEEDED, result="done")
    engine.dispose()
    return first


def test_journal_columns_and_filters(db_url: str) -> None:
    plan = fill(db_url)
    assert run("journal", db_url=db_url).out.splitlines()[0].split()[:7] == [
        "WHEN", "(UTC)", "PLAN", "ACTION", "TARGET", "HOST", "STATE"]
    table = run("journal", "--long", db_url=db_url)   # the row id and operator: --long
    assert table.code == 0, table.err
    header = table.out.splitlines()[0].split()
    assert header[:8] == ["ID", "WHEN", "(UTC)", "PLAN", "ACTION", "TARGET", "HOST", "STATE"]
    assert "OPERATOR" in header
    operator = f"{getpass.getuser()}@{socket.gethostname()}"
    migrate = next(line for line in table.out.splitlines() if " migrate " in line)
    assert f" {plan[:8]} " in migrate and " c2 -> c1 " in migrate and operator in migrate

    def ids(*args: str) -> list[str]:
        done = run("journal", *args, "-f", "value", "-c", "action", db_url=db_url)
        assert done.code == 0, done.err
        return done.out.split()

    assert ids() == ["power_on", "migrate", "disable", "power_off"]
    assert ids("--host", "c1") == ["migrate"]
    assert ids("--host", "c2") == ["migrate", "disable", "power_off"]
    assert ids("--since", "1d") == ["migrate", "disable", "power_off"]
    old = (datetime.now(timezone.utc) - timedelta(days=3)).strftime("%Y-%m-%dT%H:%M:%S")
    assert ids("--since", old) == ["power_on", "migrate", "disable", "power_off"]
    assert ids("--action", "power_off", "--action", "power_on") == ["power_on", "power_off"]
    assert ids("--plan", plan[:8], "--host", "c2", "--action", "disable") == ["disable"]
    rows = json.loads(run("journal", "--host", "c1", "-f", "json", db_url=db_url).out)
    assert [(r["plan_id"], r["hosts"], r["operator"]) for r in rows] == [
        (plan, ["c2", "c1"], operator)]
    bad = run("journal", "--since", "yesterday", db_url=db_url)
    assert bad.code == 2 and "neither an ISO 8601 time nor an age" in bad.err
