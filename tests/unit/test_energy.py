"""The pure energy model: load, idle estimates from readings, a plan's saving, the report."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from consolidator.core.energy_model import (
    CONFIGURED,
    FIT,
    MEASURED,
    Reading,
    cluster_loads,
    estimate_idle,
    fit_line,
    modelled_draw,
    saving,
)
from consolidator.core.model import Host
from consolidator.core.report import energy, hosts_point
from tests.unit.builders import cluster, hosts, vm


def test_load_is_allocated_vcpus_over_cores_capped_at_one() -> None:
    c = cluster(hosts(("a", 8, 8192), ("b", 4, 8192), ("c", 4, 8192)),
                [vm("v1", "a", vcpus=2), vm("v2", "b", vcpus=6)])
    assert cluster_loads(c) == {"a": 0.25, "b": 1.0, "c": 0.0}


def test_modelled_draw_runs_from_idle_to_peak() -> None:
    host = Host(name="h", vcpus=8, memory_mb=1, disk_gb=1, idle_watts=100.0, peak_watts=300.0)
    assert [modelled_draw(host, x) for x in (0.0, 0.5, 1.0, 2.0)] == [100, 200, 300, 300]


def test_a_line_through_readings_gives_the_idle_draw() -> None:
    points = [(0.1, 120.0), (0.5, 200.0), (0.9, 280.0)]
    intercept, slope = fit_line(points)
    assert intercept == pytest.approx(100.0) and slope == pytest.approx(200.0)
    est = estimate_idle(["h"], {"h": points}, fallback=270.0)["h"]
    assert (est.basis, round(est.watts)) == (FIT, 100)


def test_without_load_spread_the_lowest_reading_counts_and_no_reading_falls_back() -> None:
    est = estimate_idle(["a", "b"], {"a": [(0.3, 190.0), (0.3, 185.0)]}, fallback=270.0)
    assert (est["a"].basis, est["a"].watts) == (MEASURED, 185.0)
    assert (est["b"].basis, est["b"].watts) == (CONFIGURED, 270.0)


def test_saving_names_measured_and_fallen_back_hosts() -> None:
    est = estimate_idle(["a", "b"], {"a": [(0.0, 150.0)]}, fallback=270.0)
    spent = saving(["a", "b"], est, 270.0)
    assert spent.watts == 420.0 and spent.kwh_per_day == pytest.approx(10.08)
    assert spent.measured == ("a",) and spent.fell_back == ("b",)


def test_report_integrates_measured_draw_with_idle_watts_for_hosts_without_reading() -> None:
    t0 = datetime(2024, 5, 1, tzinfo=timezone.utc)
    c = cluster(hosts(("a", 8, 8192), ("b", 8, 8192)), [vm("v1", "a")])
    points = [hosts_point(t0, c, [Reading("a", 200.0, 0.1, "ipmi")]),
              hosts_point(t0 + timedelta(hours=1), c, [])]
    e = energy(points, t0 + timedelta(hours=2), idle_watts=100.0)
    # hour 1: 200 W read + 100 W for b; hour 2: no readings, 2 x 100 W
    assert e.kwh_measured == pytest.approx(0.5)
    assert energy([hosts_point(t0, c)], t0 + timedelta(hours=1), 100.0).kwh_measured is None
