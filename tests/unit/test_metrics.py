"""Prometheus metrics: values in the exposition text, and the HTTP endpoint."""

from __future__ import annotations

import socket

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from consolidator.telemetry.exporter import Metrics, MetricsError


def samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """{(sample name, sorted labels): value} parsed from the exposition text."""
    text = metrics.exposition().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_a_fresh_registry_shows_every_series_at_zero() -> None:
    got = samples(Metrics())
    assert got[("consolidator_hosts", (("state", "spare"),))] == 0
    assert got[("consolidator_migrations_total", (("result", "failed"),))] == 0
    assert got[("consolidator_plans", (("status", "superseded"),))] == 0
    assert got[("consolidator_cycle_duration_seconds", ())] == 0


def test_observed_cycles_set_gauges_and_add_to_counters() -> None:
    metrics = Metrics()
    metrics.observe_cycle(12.5, hosts_active=5, hosts_spare=2, hosts_off=4, watts_saved=1080.0,
                          migrations_ok=7, migrations_failed=1, off_holding_work=1)
    metrics.observe_cycle(3.0, hosts_active=6, hosts_spare=1, hosts_off=4, watts_saved=1080.0,
                          migrations_ok=2, migrations_failed=0)
    got = samples(metrics)
    assert got[("consolidator_hosts", (("state", "active"),))] == 6
    assert got[("consolidator_hosts", (("state", "spare"),))] == 1
    assert got[("consolidator_hosts", (("state", "powered_off"),))] == 4
    assert got[("consolidator_cycle_duration_seconds", ())] == 3.0
    assert got[("consolidator_watts_saved", ())] == 1080.0
    assert got[("consolidator_hosts_off_holding_work", ())] == 0
    assert got[("consolidator_migrations_total", (("result", "succeeded"),))] == 9
    assert got[("consolidator_migrations_total", (("result", "failed"),))] == 1


def test_plan_counts_replace_the_previous_ones() -> None:
    metrics = Metrics()
    metrics.set_plans({"proposed": 1, "succeeded": 20})
    metrics.set_plans({"succeeded": 21, "superseded": 3})
    got = samples(metrics)
    assert got[("consolidator_plans", (("status", "proposed"),))] == 0
    assert got[("consolidator_plans", (("status", "succeeded"),))] == 21
    assert got[("consolidator_plans", (("status", "superseded"),))] == 3


def test_two_instances_do_not_share_state() -> None:
    first, second = Metrics(), Metrics()
    first.observe_cycle(1.0, 1, 1, 1, 270.0, 5, 0)
    assert samples(second)[("consolidator_migrations_total", (("result", "succeeded"),))] == 0


def test_the_endpoint_serves_metrics_over_http() -> None:
    metrics = Metrics()
    metrics.observe_cycle(2.0, hosts_active=7, hosts_spare=1, hosts_off=3, watts_saved=810.0,
                          migrations_ok=4, migrations_failed=0)
    port = metrics.start(0)
    try:
        response = requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5)
        assert response.status_code == 200
        assert response.headers["Content-Type"].startswith("text/plain")
        assert 'consolidator_hosts{state="active"} 7.0' in response.text
        assert "consolidator_watts_saved 810.0" in response.text
        with pytest.raises(RuntimeError):
            metrics.start(0)
    finally:
        metrics.stop()
    with pytest.raises(requests.ConnectionError):
        requests.get(f"http://127.0.0.1:{port}/metrics", timeout=5)


def test_a_busy_port_is_a_one_line_error() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(MetricsError, match=f"127.0.0.1:{port}"):
            Metrics().start(port)


def test_power_readings_are_exported_per_host_and_in_all() -> None:
    metrics = Metrics()
    metrics.observe_power({"c-01": 180.0, "c-02": 220.5})
    metrics.observe_power({"c-02": 200.0})
    got = samples(metrics)
    assert got[("consolidator_host_power_watts", (("host", "c-02"),))] == 200.0
    assert ("consolidator_host_power_watts", (("host", "c-01"),)) not in got
    assert got[("consolidator_power_watts", ())] == 200.0
    assert got[("consolidator_power_hosts_measured", ())] == 1


def test_stored_totals_and_runs_in_progress_come_from_the_database_at_each_scrape() -> None:
    """Counters are totals the database keeps (every command adds to them); runs under way
    are a gauge, so that no counter falls when a run ends."""
    from consolidator.telemetry.exporter import StoredStats

    totals = {("runs_total", (("kind", "plan"), ("result", "succeeded"))): 2.0,
              ("runs_total", (("kind", "rollback"), ("result", "failed"))): 1.0,
              ("runs_started_total", (("kind", "plan"),)): 3.0,
              ("journal_migrations_total", (("result", "failed"),)): 1.0,
              ("migration_duration_seconds_bucket", (("le", "1.0"),)): 1.0,
              ("migration_duration_seconds_bucket", (("le", "5.0"),)): 2.0,
              ("migration_duration_seconds_bucket", (("le", "+Inf"),)): 3.0,
              ("migration_duration_seconds_sum", ()): 74.5,
              ("notifications_dropped_total", (("reason", "deadline"),)): 4.0,
              ("leases_lost_total", (("lease", "daemon"),)): 1.0,
              ("last_cycle_timestamp_seconds", ()): 1_700_003_600.0}
    stats = [StoredStats(totals=totals, running={"plan": 1})]
    metrics = Metrics(stored=lambda: stats[-1])
    got = samples(metrics)
    assert got[("consolidator_runs_total", (("kind", "plan"), ("result", "succeeded")))] == 2
    assert got[("consolidator_runs_total", (("kind", "rollback"), ("result", "failed")))] == 1
    assert got[("consolidator_runs_total", (("kind", "plan"), ("result", "failed")))] == 0
    assert got[("consolidator_runs_started_total", (("kind", "plan"),))] == 3
    assert got[("consolidator_runs_in_progress", (("kind", "plan"),))] == 1
    assert got[("consolidator_runs_in_progress", (("kind", "rollback"),))] == 0
    assert got[("consolidator_journal_migrations_total", (("result", "failed"),))] == 1
    assert got[("consolidator_journal_migrations_total", (("result", "succeeded"),))] == 0
    histogram = "consolidator_migration_duration_seconds"
    assert got[(f"{histogram}_bucket", (("le", "1.0"),))] == 1
    assert got[(f"{histogram}_bucket", (("le", "5.0"),))] == 2
    assert got[(f"{histogram}_bucket", (("le", "+Inf"),))] == 3
    assert got[(f"{histogram}_count", ())] == 3 and got[(f"{histogram}_sum", ())] == 74.5
    assert got[("consolidator_notifications_dropped_total", (("reason", "deadline"),))] == 4
    assert got[("consolidator_notifications_dropped_total", (("reason", "queue_full"),))] == 0
    assert got[("consolidator_leases_lost_total", (("lease", "daemon"),))] == 1
    assert got[("consolidator_leases_lost_total", (("lease", "executor"),))] == 0
    assert got[("consolidator_last_cycle_timestamp_seconds", ())] == 1_700_003_600.0
    stats.append(StoredStats(totals={}, running={}))
    assert ("consolidator_last_cycle_timestamp_seconds", ()) not in samples(metrics)


def test_build_info_and_the_leader_gauge() -> None:
    metrics = Metrics()
    got = samples(metrics)
    info = [labels for name, labels in got if name == "consolidator_build_info"]
    assert len(info) == 1 and dict(info[0])["version"] and dict(info[0])["python"]
    assert got[("consolidator_build_info", info[0])] == 1
    assert got[("consolidator_leader", ())] == 0
    metrics.set_leader(True)
    assert samples(metrics)[("consolidator_leader", ())] == 1


def test_hosts_and_watts_saved_can_be_set_from_what_the_database_holds() -> None:
    metrics = Metrics()
    metrics.set_hosts(4, 1, 6, 1620.0)
    got = samples(metrics)
    assert got[("consolidator_hosts", (("state", "powered_off"),))] == 6
    assert got[("consolidator_watts_saved", ())] == 1620.0


def test_the_grafana_dashboard_reads_only_series_the_exporter_serves() -> None:
    """etc/grafana/consolidator-dashboard.json: valid JSON, every query over our series."""
    import json
    import re
    from pathlib import Path

    from consolidator.telemetry.exporter import StoredStats

    board = json.loads((Path(__file__).resolve().parents[2] / "etc" / "grafana" /
                        "consolidator-dashboard.json").read_text())
    metrics = Metrics(stored=lambda: StoredStats(
        totals={("last_cycle_timestamp_seconds", ()): 1.0}, running={}))
    served = {name for name, _ in samples(metrics)}
    used = {name for p in board["panels"] for t in p["targets"]
            for name in re.findall(r"consolidator_[a-z_]+", t["expr"])}
    assert used and used <= served, used - served
    assert {"consolidator_runs_total", "consolidator_migration_duration_seconds_bucket",
            "consolidator_hosts", "consolidator_watts_saved"} <= used
