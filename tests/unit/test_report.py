"""The report's pure parts: hosts on per snapshot, cycles from the journal, energy in kWh."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from consolidator.core.journal_entry import Entry
from consolidator.core.plan import Move, PlanDraft, StoredPlan
from consolidator.core.report import (
    HostsPoint,
    build,
    cycle,
    energy,
    hosts_point,
    hourly,
    to_json,
)
from consolidator.render import count_bar as bar
from consolidator.render.report import render_text
from tests.unit.builders import cluster, hosts, vm

MIDNIGHT = datetime(2024, 5, 1, tzinfo=timezone.utc)


def day_points(night: int = 6, day: int = 8, total: int = 11) -> list[HostsPoint]:
    """24 hourly snapshots: `night` hosts on 18:00-06:00 and `day` hosts on 06:00-18:00."""
    return [HostsPoint(time=MIDNIGHT + timedelta(hours=h),
                       hosts_on=day if 6 <= h < 18 else night, hosts_total=total, spare=1,
                       instances=150) for h in range(24)]


def test_a_day_of_six_hosts_at_night_and_eight_by_day() -> None:
    e = energy(day_points(), MIDNIGHT + timedelta(days=1), idle_watts=270.0)
    assert e.hours == 24
    # (12 h x 6 + 12 h x 8) x 270 W = 168 host-hours x 0.27 kW
    assert e.kwh_policy == pytest.approx(45.36)
    assert e.kwh_no_policy == pytest.approx(11 * 24 * 0.27)  # 71.28
    assert e.kwh_per_day_policy == pytest.approx(45.36)
    assert e.kwh_per_year_policy == pytest.approx(45.36 * 365)  # 16 556.4
    assert e.kwh_per_year_no_policy == pytest.approx(71.28 * 365)  # 26 017.2
    assert e.reduction_pct == pytest.approx(100 * (1 - 168 / 264))  # 36.36 %


def test_steps_last_until_the_next_snapshot_and_the_last_until_the_end() -> None:
    points = [HostsPoint(MIDNIGHT, 10, 10, 0, 0),
              HostsPoint(MIDNIGHT + timedelta(hours=2), 4, 10, 0, 0)]
    e = energy(points, MIDNIGHT + timedelta(hours=3), idle_watts=1000.0)
    assert e.hours == 3
    assert e.kwh_policy == pytest.approx(10 * 2 + 4 * 1)
    assert e.kwh_no_policy == pytest.approx(30)
    assert e.kwh_per_day_policy == pytest.approx(24 * 8)


def test_paper_004_table_ii_scaling() -> None:
    # 004: 43 992 Wh a day -> 923 kWh in three weeks and 16 057 kWh a year.
    e = energy([HostsPoint(MIDNIGHT, 1, 1, 0, 0)], MIDNIGHT + timedelta(days=21), 43_992 / 24)
    assert e.kwh_policy == pytest.approx(923.8, abs=0.1)
    assert e.kwh_per_year_policy == pytest.approx(16_057, abs=1)


def test_no_snapshots_give_zero_energy() -> None:
    e = energy([], MIDNIGHT, 270.0)
    assert (e.hours, e.kwh_policy, e.kwh_per_year_policy, e.reduction_pct) == (0, 0, 0, 0)


def test_hosts_on_needs_power_and_an_up_service_and_spare_is_empty() -> None:
    on = hosts(("a", 8, 8192), ("b", 8, 8192), ("e", 8, 8192))
    off = hosts(("c", 8, 8192), power="off", state="down")
    down = hosts(("d", 8, 8192), state="down")
    point = hosts_point(MIDNIGHT, cluster(on + off + down, [vm("v1", "a"), vm("v2", "b")]))
    assert (point.hosts_on, point.hosts_total, point.spare, point.instances) == (3, 5, 1, 2)


def _entry(action: str, target: str, state: str) -> Entry:
    return Entry(id=0, cloud="c", plan_id="p", action=action, target=target, params={},
                 state=state, created_at=MIDNIGHT, started_at=None, finished_at=None,
                 result=None)


def test_a_cycle_counts_each_target_once() -> None:
    draft = PlanDraft(algorithm="zoned-bestfit", ranking=None,
                      migrations=(Move("i1", "v1", "b", "a", 1), Move("i2", "v2", "b", "a", 1),
                                  Move("i3", "v3", "c", "a", 1)),
                      power_off=("b", "c"), hosts_before=3, hosts_after=1, lower_bound=1,
                      migrations_lower_bound=3, spare=0)
    plan = StoredPlan(id="p" * 8, cloud="c", snapshot_id="s", status="failed",
                      created_at=MIDNIGHT, updated_at=MIDNIGHT, reason=None, draft=draft)
    entries = [_entry("migrate", "i1", "succeeded"), _entry("migrate", "i2", "failed"),
               _entry("migrate", "i2", "succeeded"), _entry("migrate", "i1", "succeeded"),
               _entry("migrate", "i3", "failed"), _entry("disable", "b", "succeeded"),
               _entry("power_off", "b", "succeeded")]
    got = cycle(plan, entries)
    assert (got.migrations_planned, got.migrations_done, got.migrations_failed) == (3, 2, 1)
    assert (got.power_off_planned, got.hosts_powered_off, got.hosts_powered_on) == (2, 1, 0)


def test_build_keeps_the_period_and_renders_table_and_json() -> None:
    points = [*day_points(), HostsPoint(MIDNIGHT - timedelta(hours=1), 11, 11, 0, 0)]
    report = build("alto", MIDNIGHT, MIDNIGHT + timedelta(days=1), 270.0, points, [])
    assert len(report.points) == 24 and report.energy.kwh_policy == pytest.approx(45.36)
    data = to_json(report)
    assert data["period"]["days"] == 1
    assert data["hosts_on"][6] == {"time": "2024-05-01T06:00:00+00:00", "hosts_on": 8,
                                   "hosts_total": 11, "spare": 1, "instances": 150,
                                   "measured_watts": None, "measured_hosts": 0}
    assert data["energy"]["reduction_pct"] == 36.364
    text = render_text(report)
    assert "2024-05-01 05:00  " + bar(6, 11, 11) + "  6/11" in text
    assert "2024-05-01 06:00  " + bar(8, 11, 11) + "  8/11" in text
    assert "no plan ran in this period" in text and "16556" in text
    # both reductions in one form: it printed '36.4 %' beside '0 %'
    reduction = next(line for line in text.splitlines() if line.startswith("reduction"))
    assert reduction.split()[1:] == ["36.4", "%", "0.0", "%"]


def test_hourly_keeps_the_last_snapshot_of_each_hour() -> None:
    points = [HostsPoint(MIDNIGHT + timedelta(minutes=m), m, 60, 0, 0) for m in (0, 5, 59, 61)]
    assert [p.hosts_on for p in hourly(points)] == [59, 61]


def test_bars_scale_to_the_widest_cloud() -> None:
    assert bar(6, 11, 11) == "###" * 6 + "..." * 5
    assert len(bar(300, 440, 440)) == 44 and bar(300, 440, 440).count("#") == 30


def test_a_cycle_of_auto_shows_what_was_asked_and_what_won() -> None:
    """The cycles table read only the winner ('hvp') for a plan asked of -a auto."""
    from dataclasses import replace as _replace

    from consolidator.core.report import to_json as _to_json
    base = PlanDraft(algorithm="hvp", ranking=None, migrations=(), power_off=(),
                     hosts_before=3, hosts_after=3, lower_bound=1, migrations_lower_bound=0,
                     spare=0)
    plans = [StoredPlan(id=name * 8, cloud="c", snapshot_id="s", status="succeeded",
                        created_at=MIDNIGHT, updated_at=MIDNIGHT, reason=None, draft=draft)
             for name, draft in (("a", _replace(base, choice={"asked": "auto",
                                                              "algorithm": "hvp"})),
                                 ("b", base))]
    cycles = [cycle(p, []) for p in plans]
    assert [c.asked for c in cycles] == ["auto", None]
    report = build("c", MIDNIGHT, MIDNIGHT + timedelta(days=1), 270.0, day_points(), cycles)
    text = render_text(report)
    assert "aaaaaaaa  auto -> hvp" in text and "bbbbbbbb  hvp " in text
    assert [c["asked"] for c in _to_json(report)["cycles"]] == ["auto", None]
