"""The snapshot store on SQLite, PostgreSQL and MariaDB: migrations, round trip, lookup errors."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, inspect, select

from consolidator.core.errors import NotFoundError, NotMigratedError
from consolidator.core.model import Cluster
from consolidator.scenario.files import load_cluster
from consolidator.store.db import check_migrated, current_revision, head_revision, make_engine
from consolidator.store.db import upgrade as db_upgrade
from consolidator.store.journal import entries as journal_entries
from consolidator.store.snapshots import (
    list_snapshots,
    load_snapshot,
    resolve_snapshot_id,
    save_snapshot,
    snapshot_rows,
)
from consolidator.store.tables import leases, metadata
from tests.conftest import reflected


def test_unmigrated_database_is_refused_then_upgrade_creates_schema(empty_db_url: str) -> None:
    engine = make_engine(empty_db_url)
    with pytest.raises(NotMigratedError, match="run 'consolidator db upgrade'"):
        check_migrated(engine)
    before, after = db_upgrade(engine)
    assert before is None and after == head_revision()
    check_migrated(engine)
    assert db_upgrade(engine) == (after, after)
    tables = set(inspect(engine).get_table_names())
    assert {"snapshots", "snapshot_hosts", "snapshot_instances", "snapshot_server_groups",
            "plans", "plan_migrations", "plan_power_actions", "journal", "leases"} <= tables
    assert current_revision(engine) == head_revision()


def test_snapshot_round_trip(db_url: str, bundled_scenario: Path) -> None:
    engine = make_engine(db_url)
    cluster = load_cluster(bundled_scenario)
    first = save_snapshot(engine, cluster, cloud="alto", source="test").info.id
    second = save_snapshot(engine, cluster, cloud="other", source="test").info.id
    snap = load_snapshot(engine, first)
    assert snap.cluster == cluster
    assert snap.info.cloud == "alto"
    assert snap.info.instance_count == len(cluster.instances)
    assert snap.info.taken_at.tzinfo is not None
    assert [i.id for i in list_snapshots(engine)] == [second, first]
    assert [i.id for i in list_snapshots(engine, cloud="alto")] == [first]
    assert resolve_snapshot_id(engine, first[:10]) == first


def test_unknown_and_ambiguous_ids(db_url: str, bundled_scenario: Path) -> None:
    engine = make_engine(db_url)
    with pytest.raises(NotFoundError, match="snapshot 'nope' does not exist"):
        load_snapshot(engine, "nope")
    cluster = load_cluster(bundled_scenario)
    ids = [save_snapshot(engine, cluster, cloud="c", source="t").info.id for _ in range(20)]
    shared = {i[0] for i in ids}
    common = next(c for c in shared if sum(i.startswith(c) for i in ids) > 1)
    with pytest.raises(NotFoundError, match="ambiguous") as raised:
        resolve_snapshot_id(engine, common)
    assert raised.value.exit_code == 2   # as a missing snapshot's: the reference names no one


def test_snapshot_round_trip_keeps_aggregates(db_url: str, bundled_scenario: Path) -> None:
    engine = make_engine(db_url)
    cluster = load_cluster(bundled_scenario)
    hosts = [replace(h, aggregates=("gpu-hosts", "rack-1") if n % 2 else ())
             for n, h in enumerate(cluster.hosts)]
    cluster = Cluster(hosts=tuple(hosts), instances=cluster.instances,
                      server_groups=cluster.server_groups)
    snap = load_snapshot(engine, save_snapshot(engine, cluster, cloud="c", source="t").info.id)
    assert snap.cluster == cluster
    assert snap.cluster.hosts[1].aggregates == ("gpu-hosts", "rack-1")


def test_snapshot_round_trip_keeps_cpu_speed(db_url: str, bundled_scenario: Path) -> None:
    engine = make_engine(db_url)
    cluster = load_cluster(bundled_scenario)
    cluster = replace(cluster, hosts=tuple(replace(h, cpu_speed=1.4 if n % 2 else 1.0)
                                           for n, h in enumerate(cluster.hosts)))
    snap = load_snapshot(engine, save_snapshot(engine, cluster, cloud="c", source="t").info.id)
    assert [h.cpu_speed for h in snap.cluster.hosts] == [h.cpu_speed for h in cluster.hosts]


def save_as_revision_0001(engine: Engine, cluster: Cluster) -> str:
    """Store a snapshot as 0001's code did: only the columns the 0001 schema has."""
    old = reflected(engine)
    assert "aggregates" not in old.tables["snapshot_hosts"].c
    snapshot_id = str(uuid.uuid4())
    header = {"id": snapshot_id, "cloud": "old", "taken_at": datetime.now(timezone.utc),
              "source": "0001", "capacity_source": "placement",
              "host_count": len(cluster.hosts), "instance_count": len(cluster.instances)}
    with engine.begin() as conn:
        conn.execute(old.tables["snapshots"].insert(), header)
        for table, rows in snapshot_rows(snapshot_id, cluster):
            columns = old.tables[table.name].c
            if rows:
                conn.execute(old.tables[table.name].insert(),
                             [{k: v for k, v in row.items() if k in columns} for row in rows])
    return snapshot_id


def test_database_at_0001_upgrades_and_reads_empty_aggregates(
        empty_db_url: str, bundled_scenario: Path) -> None:
    engine = make_engine(empty_db_url)
    assert db_upgrade(engine, "0001") == (None, "0001")
    cluster = load_cluster(bundled_scenario)
    snapshot_id = save_as_revision_0001(engine, cluster)
    with pytest.raises(NotMigratedError, match="at revision 0001"):
        check_migrated(engine)
    assert db_upgrade(engine) == ("0001", head_revision())
    check_migrated(engine)
    columns = {c["name"] for c in inspect(engine).get_columns("snapshot_hosts")}
    assert "aggregates" in columns
    snap = load_snapshot(engine, snapshot_id)
    assert snap.cluster == cluster
    assert all(h.aggregates == () for h in snap.cluster.hosts)
    engine.dispose()


def test_migrations_build_exactly_the_tables(db_url: str) -> None:
    engine = make_engine(db_url)
    with engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), metadata) == []
    engine.dispose()


def test_database_at_0003_upgrades_its_leases_to_generation_1(empty_db_url: str) -> None:
    """A lease taken by 0003's code is generation 1 after 0004; journal rows written before
    it name no lease."""
    engine = make_engine(empty_db_url)
    assert db_upgrade(engine, "0003") == (None, "0003")
    old = reflected(engine)
    assert "generation" not in old.tables["leases"].c
    now = datetime.now(timezone.utc)
    with engine.begin() as conn:
        conn.execute(old.tables["leases"].insert(), {
            "name": "executor:old", "holder": "h:1:x", "acquired_at": now,
            "expires_at": now})
        conn.execute(old.tables["journal"].insert(), {
            "cloud": "old", "action": "migrate", "target": "i", "params": {},
            "state": "succeeded", "created_at": now})
    assert db_upgrade(engine) == ("0003", head_revision())
    check_migrated(engine)
    with engine.connect() as conn:
        assert conn.execute(select(leases.c.generation)).scalar_one() == 1
    entry = journal_entries(engine)[0]
    assert entry.lease_holder is None and entry.lease_generation is None
    engine.dispose()
