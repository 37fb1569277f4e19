"""The snapshot store on SQLite and PostgreSQL: migrations, round trip, lookup errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import inspect

from consolidator.errors import NotFoundError, NotMigratedError, UsageError
from consolidator.scenario import load_cluster
from consolidator.store.db import check_migrated, current_revision, head_revision, make_engine
from consolidator.store.db import upgrade as db_upgrade
from consolidator.store.snapshots import (
    list_snapshots,
    load_snapshot,
    resolve_snapshot_id,
    save_snapshot,
)


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
    first = save_snapshot(engine, cluster, cloud="alto", source="test")
    second = save_snapshot(engine, cluster, cloud="other", source="test")
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
    ids = [save_snapshot(engine, cluster, cloud="c", source="t") for _ in range(20)]
    shared = {i[0] for i in ids}
    common = next(c for c in shared if sum(i.startswith(c) for i in ids) > 1)
    with pytest.raises(UsageError, match="ambiguous"):
        resolve_snapshot_id(engine, common)
