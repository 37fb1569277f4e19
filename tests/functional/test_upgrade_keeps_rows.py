"""'db upgrade' of a database an older release left keeps every row (issue 48), on SQLite,
PostgreSQL and MariaDB: the database is built at revision 0001 (the first release's first
schema), filled in every table as each table appears, then upgraded to the head."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from sqlalchemy import select

from consolidator.store.db import check_migrated, head_revision, make_engine, upgrade
from consolidator.store.tables import metadata
from tests.conftest import reflected
from tests.functional.cli import run

#: A time with microseconds: the store compares its times to the microsecond.
T0 = datetime(2026, 11, 20, 8, 30, 15, 123456, tzinfo=timezone.utc)
SNAP, PLAN = "11111111-2222-3333-4444-555555555555", "66666666-7777-8888-9999-000000000000"


def _host(name: str, position: int) -> dict[str, Any]:
    return {"snapshot_id": SNAP, "name": name, "position": position, "host_id": f"id-{name}",
            "compute_host": name, "vcpus": 16, "memory_mb": 65536, "disk_gb": 1000,
            "cpu_allocation_ratio": 4.0, "ram_allocation_ratio": 1.0,
            "disk_allocation_ratio": 1.0, "reserved_vcpus": 0, "reserved_memory_mb": 512,
            "reserved_disk_gb": 0, "availability_zone": "nova", "status": "enabled",
            "state": "up", "power": "on", "disabled_reason": None,
            "bmc": {"driver": "ipmi", "address": f"127.0.0.1:{623 + position}"}}


#: The rows each revision's tables get, as the code of that revision wrote them.
ROWS: dict[str, dict[str, list[dict[str, Any]]]] = {
    "0001": {
        "snapshots": [{"id": SNAP, "cloud": "prod", "taken_at": T0, "source": "nova",
                       "capacity_source": "placement", "host_count": 2, "instance_count": 2}],
        "snapshot_hosts": [_host("Compute-1", 0), _host("compute-1", 1)],
        "snapshot_instances": [
            {"snapshot_id": SNAP, "instance_id": f"i-{n}", "position": n, "name": f"vm {n}",
             "host": "compute-1", "vcpus": 2, "memory_mb": 4096, "disk_gb": 20,
             "status": "ACTIVE", "instance_metadata": {"importance": "low", "ü": "✓"},
             "project_id": "p", "flavor": "m1.small", "flavor_extra_specs": {},
             "usage": {"cpu_mean": 0.25, "cpu_std": 0.05} if n else None}
            for n in range(2)],
        "snapshot_server_groups": [{"snapshot_id": SNAP, "group_id": "g-1", "position": 0,
                                    "name": "web", "policy": "anti-affinity",
                                    "members": ["i-0", "i-1"]}],
        "plans": [{"id": PLAN, "cloud": "prod", "snapshot_id": SNAP, "algorithm": "firstfit",
                   "ranking": None, "status": "succeeded", "created_at": T0,
                   "updated_at": T0 + timedelta(microseconds=1), "hosts_before": 2,
                   "hosts_after": 1, "lower_bound": 1, "migrations_lower_bound": 1,
                   "spare": 0, "reason": "x" * 5000,
                   "details": {"notes": ["kept"], "options": {"n_plus_one": False}}}],
        "plan_migrations": [{"plan_id": PLAN, "instance_id": "i-0", "position": 0,
                             "instance_name": "vm 0", "source": "Compute-1",
                             "destination": "compute-1", "wave": 1}],
        "plan_power_actions": [{"plan_id": PLAN, "host": "Compute-1", "action": "off",
                                "position": 0}],
        "journal": [{"cloud": "prod", "plan_id": PLAN if n < 3 else None,
                     "action": "migrate" if n < 2 else "power_off", "target": f"t-{n}",
                     "params": {"n": n}, "state": "succeeded" if n != 1 else "failed",
                     "created_at": T0 + timedelta(microseconds=n),
                     "started_at": T0, "finished_at": T0 + timedelta(seconds=n),
                     "result": "ok"} for n in range(4)],
        "leases": [{"name": "executor:prod", "holder": "host-a:1:x", "acquired_at": T0,
                    "expires_at": T0 + timedelta(seconds=90)}],
    },
    "0005": {
        "snapshot_power": [{"snapshot_id": SNAP, "host": "compute-1", "watts": 211.5,
                            "load": 0.25, "source": "redfish"}],
    },
    "0009": {
        "host_states": [{"cloud": "prod", "host": "Compute-1", "state": "off", "since": T0,
                         "plan_id": PLAN, "actor": "apply", "why": "emptied"}],
        "host_state_changes": [{"cloud": "prod", "host": "Compute-1", "before": "in_service",
                                "after": "off", "at": T0, "plan_id": PLAN, "actor": "apply",
                                "why": "emptied", "operator": "op@host"}],
    },
}


def test_upgrading_an_old_database_keeps_every_row(empty_db_url: str) -> None:
    engine = make_engine(empty_db_url)
    for revision, tables in ROWS.items():
        upgrade(engine, revision)
        old = reflected(engine)
        with engine.begin() as conn:
            for name, rows in tables.items():
                conn.execute(old.tables[name].insert(), rows)
    old = reflected(engine)      # counted through the old schema: the new has more columns
    before = {name: _count(engine, old.tables[name]) for tables in ROWS.values()
              for name in tables}
    upgraded = run("db", "upgrade", db_url=empty_db_url)
    assert upgraded.code == 0, upgraded.err
    assert "0009" in upgraded.out and head_revision() in upgraded.out, upgraded.out
    check_migrated(engine)
    for tables in ROWS.values():
        for name, rows in tables.items():
            table = metadata.tables[name]
            with engine.connect() as conn:
                stored = [dict(r._mapping) for r in conn.execute(select(table))]
            assert len(stored) == before[name] == len(rows), name
            for row in rows:
                assert any(all(s[k] == v for k, v in row.items()) for s in stored), \
                    f"{name}: {row} is not kept as it was: {stored}"
    with engine.connect() as conn:
        lease = conn.execute(select(metadata.tables["leases"])).one()
        totals = {(r.name, r.labels): r.value
                  for r in conn.execute(select(metadata.tables["metric_totals"]))}
    assert lease.generation == 1                      # 0004: a lease taken before it
    # 0010 counts what the plans and journal held
    assert totals == {("runs_total", "kind=plan,result=succeeded"): 1.0,
                      ("journal_migrations_total", "result=succeeded"): 1.0,
                      ("journal_migrations_total", "result=failed"): 1.0}
    engine.dispose()


def _count(engine: Any, table: Any) -> int:
    with engine.connect() as conn:
        return len(conn.execute(select(table)).all())
