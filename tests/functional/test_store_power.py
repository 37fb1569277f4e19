"""Power readings in the store (revision 0005) on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from sqlalchemy import inspect

from consolidator.core.energy_model import Reading
from consolidator.scenario.files import load_cluster
from consolidator.store.db import check_migrated, head_revision, make_engine
from consolidator.store.db import upgrade as db_upgrade
from consolidator.store.snapshots import (
    load_snapshot,
    measured_power,
    power_history,
    save_snapshot,
)

T0 = datetime(2024, 5, 1, tzinfo=timezone.utc)


def test_database_at_0004_upgrades_to_power_readings(empty_db_url: str,
                                                     bundled_scenario: Path) -> None:
    engine = make_engine(empty_db_url)
    assert db_upgrade(engine, "0004") == (None, "0004")
    assert "snapshot_power" not in inspect(engine).get_table_names()
    assert db_upgrade(engine) == ("0004", head_revision())
    check_migrated(engine)
    cluster = load_cluster(bundled_scenario)
    host = cluster.hosts[0].name
    snap = save_snapshot(engine, cluster, cloud="alto", source="t",
                         readings=(Reading(host, 210.5, 0.25, "redfish"),))
    assert load_snapshot(engine, snap.info.id).readings == (
        Reading(host, 210.5, 0.25, "redfish"),)
    engine.dispose()


def test_readings_round_trip_and_feed_history_and_totals(db_url: str,
                                                        bundled_scenario: Path) -> None:
    engine = make_engine(db_url)
    cluster = load_cluster(bundled_scenario)
    a, b = cluster.hosts[0].name, cluster.hosts[1].name
    ids = []
    for hour, (wa, load) in enumerate([(150.0, 0.1), (230.0, 0.5), (310.0, 0.9)]):
        ids.append(save_snapshot(
            engine, cluster, cloud="alto", source="t", taken_at=T0 + timedelta(hours=hour),
            readings=(Reading(a, wa, load, "ipmi"),) + ((Reading(b, 99.0, 0.0, "redfish"),)
                                                        if hour == 0 else ())).info.id)
    save_snapshot(engine, cluster, cloud="other", source="t", taken_at=T0,
                  readings=(Reading(a, 1.0, 0.0, "ipmi"),))
    history = power_history(engine, "alto", before=T0 + timedelta(hours=1), limit=10)
    assert sorted(history[a]) == [(0.1, 150.0), (0.5, 230.0)]
    assert history[b] == [(0.0, 99.0)]
    assert power_history(engine, "alto", before=T0 + timedelta(hours=2), limit=1) == {
        a: [(0.9, 310.0)]}
    assert measured_power(engine, "alto") == {ids[0]: (249.0, 2), ids[1]: (230.0, 1),
                                              ids[2]: (310.0, 1)}
    engine.dispose()
