"""consolidator report over a simulated day of hourly cycles, run as a real subprocess."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
import time_machine
from sqlalchemy import Engine

from consolidator.core.model import Cluster, Host, Instance
from consolidator.core.plan import Move, PlanDraft
from consolidator.store import journal
from consolidator.store.db import make_engine
from consolidator.store.plans import save_plan, set_status
from consolidator.store.snapshots import save_snapshot
from tests.functional.cli import run

DAY = datetime(2024, 5, 1, tzinfo=timezone.utc)
UNTIL = "2024-05-02T00:00:00Z"
NAMES = [f"compute-{n:02d}" for n in range(1, 12)]
#: Hosts on at each hour's snapshot: 7 at night (6 full, 1 spare) and 8 by day (2 spares).
#: The 06:00 cycle powers compute-08 on and the 18:00 cycle powers it off, so the
#: snapshots one hour later show the change.
HOSTS_ON = [7] * 7 + [8] * 12 + [7] * 5


def simulated_cluster(hosts_on: int, moved: bool) -> Cluster:
    """11 hosts, the first hosts_on powered; 60 instances on compute-01..06."""
    hosts = tuple(Host(name=name, vcpus=64, memory_mb=262144, disk_gb=2000,
                       **({} if i < hosts_on else
                          {"power": "off", "state": "down", "status": "disabled"}))
                  for i, name in enumerate(NAMES))
    instances = []
    for n in range(60):
        host = NAMES[n // 10]
        if moved and n in (50, 51):
            host = NAMES[0]
        instances.append(Instance(name=f"vm-{n:03d}", host=host, vcpus=2, memory_mb=4096,
                                  disk_gb=20))
    return Cluster(hosts=hosts, instances=tuple(instances))


def draft(migrations: tuple[Move, ...] = (), power_off: tuple[str, ...] = (),
          power_on: tuple[str, ...] = ()) -> PlanDraft:
    """An hourly cycle's plan."""
    return PlanDraft(algorithm="zoned-bestfit", ranking=None, migrations=migrations,
                     power_off=power_off, power_on=power_on, hosts_before=7, hosts_after=7,
                     lower_bound=2, migrations_lower_bound=0, spare=1)


def run_cycle(engine: Engine, hour: int) -> None:
    """Snapshot, plan and (for the hours that do something) apply, with the clock at hour."""
    now = DAY + timedelta(hours=hour)
    cluster = simulated_cluster(HOSTS_ON[hour], moved=hour > 3)
    snapshot_id = save_snapshot(engine, cluster, cloud="alto", source="simulated",
                                taken_at=now).info.id
    moves = tuple(Move(f"id-{n}", f"vm-{n:03d}", "compute-06", "compute-01", 1)
                  for n in (50, 51))
    actions = {3: (draft(migrations=moves), [("migrate", "id-50"), ("migrate", "id-51")]),
               6: (draft(power_on=("compute-08",)), [("power_on", "compute-08"),
                                                     ("enable", "compute-08")]),
               18: (draft(power_off=("compute-08",)), [("disable", "compute-08"),
                                                       ("power_off", "compute-08")])}
    plan, done = actions.get(hour, (draft(), []))
    with time_machine.travel(now + timedelta(minutes=1), tick=False):
        plan_id = save_plan(engine, plan, cloud="alto", snapshot_id=snapshot_id).id
        if not done:
            return
        for status in ("approved", "running"):
            set_status(engine, plan_id, status)
        for action, target in done:
            journal.record(engine, cloud="alto", plan_id=plan_id, action=action,
                           target=target, state=journal.SUCCEEDED, result="ok")
        set_status(engine, plan_id, "succeeded")


@pytest.fixture
def simulated_day(db_url: str) -> str:
    """A database holding 24 hourly cycles of cloud 'alto' on 2024-05-01."""
    engine = make_engine(db_url)
    for hour in range(24):
        run_cycle(engine, hour)
    engine.dispose()
    return db_url


def test_report_json_shows_the_day_and_its_energy(simulated_day: str) -> None:
    result = run("report", "--days", "1", "--until", UNTIL, "--format", "json",
                 db_url=simulated_day)
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert data["cloud"] == "alto"
    assert data["period"] == {"from": "2024-05-01T00:00:00+00:00",
                              "to": "2024-05-02T00:00:00+00:00", "days": 1.0}
    assert [p["hosts_on"] for p in data["hosts_on"]] == HOSTS_ON
    assert {p["hosts_total"] for p in data["hosts_on"]} == {11}
    assert [p["spare"] for p in data["hosts_on"]] == [n - 6 for n in HOSTS_ON]
    assert data["hosts_on"][6]["time"] == "2024-05-01T06:00:00+00:00"

    cycles = {c["time"][11:16]: c for c in data["cycles"]}
    assert sorted(cycles) == ["03:01", "06:01", "18:01"]   # only the plans that ran
    assert cycles["03:01"]["migrations_planned"] == cycles["03:01"]["migrations_done"] == 2
    assert cycles["03:01"]["status"] == "succeeded"
    assert cycles["06:01"]["hosts_powered_on"] == 1
    assert cycles["18:01"]["hosts_powered_off"] == cycles["18:01"]["power_off_planned"] == 1
    assert {c["status"] for c in data["cycles"]} == {"succeeded"}
    assert data["latest_snapshot"] == "2024-05-01T23:00:00+00:00"
    assert sum(c["migrations_done"] for c in data["cycles"]) == 2

    # 12 h x 7 hosts + 12 h x 8 hosts = 180 host-hours at 270 W; no policy: 11 x 24 = 264.
    assert data["energy"] == {
        "hours": 24.0, "kwh_policy": 48.6, "kwh_no_policy": 71.28,
        "kwh_per_day_policy": 48.6, "kwh_per_day_no_policy": 71.28,
        "kwh_per_year_policy": 17739.0, "kwh_per_year_no_policy": 26017.2,
        "reduction_pct": 31.818, "kwh_measured": None, "kwh_per_day_measured": None}


def test_report_table_shows_hosts_going_off_and_on(simulated_day: str) -> None:
    result = run("report", "--days", "1", "--until", UNTIL, db_url=simulated_day)
    assert result.code == 0, result.err
    rows = {line[11:16]: line for line in result.out.splitlines()
            if line.startswith("2024-05-01 ") and "/11" in line}
    assert len(rows) == 24
    assert "7/11" in rows["06:00"] and "8/11" in rows["07:00"]
    assert "8/11" in rows["18:00"] and "7/11" in rows["19:00"]
    assert rows["07:00"].count("#") > rows["06:00"].count("#")
    assert rows["19:00"].count("#") < rows["18:00"].count("#")
    assert "48.6" in result.out and "71.3" in result.out and "31.8 %" in result.out
    assert "17739" in result.out and "26017" in result.out
    age = next(line for line in result.out.splitlines() if "newest snapshot" in line)
    assert "2024-05-01 23:00 UTC" in age and " ago" in age and "consolidator snapshot" in age
    assert "superseded" not in result.out and "proposed" not in result.out


def test_report_defaults_to_the_last_days_and_needs_a_cloud_among_several(db_url: str) -> None:
    engine = make_engine(db_url)
    now = datetime.now(timezone.utc)
    for hours_ago, on in ((30 * 24, 11), (3, 8), (2, 7), (1, 7)):
        save_snapshot(engine, simulated_cluster(on, moved=False), cloud="alto",
                      source="simulated", taken_at=now - timedelta(hours=hours_ago))
    result = run("report", "--days", "1", "--format", "json", db_url=db_url)
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert [p["hosts_on"] for p in data["hosts_on"]] == [8, 7, 7]
    assert data["cycles"] == [] and 3 <= data["energy"]["hours"] < 3.1

    save_snapshot(engine, simulated_cluster(11, moved=False), cloud="other", source="simulated")
    engine.dispose()
    refused = run("report", db_url=db_url)
    assert refused.code == 2 and "name one with --cloud" in refused.err
    assert run("report", "--cloud", "other", db_url=db_url).code == 0


@pytest.mark.parametrize("suffix", [".svg", ".html", ".png"])
def test_report_plot_writes_the_picture_of_the_json_history(simulated_day: str, tmp_path,
                                                            suffix: str) -> None:
    """--plot draws hosts on, migrations per cycle and the energy saved; the picture carries
    the series it draws, which are those of the JSON output."""
    from consolidator.render.plot_data import report_series
    from tests.functional.plots import embedded_series

    picture = tmp_path / f"history{suffix}"
    result = run("report", "--days", "1", "--until", UNTIL, "--format", "json", "--plot",
                 str(picture), db_url=simulated_day)
    assert result.code == 0, result.err
    series = embedded_series(picture)
    assert series == report_series(json.loads(result.out))
    assert series["hosts_on"] == HOSTS_ON and sum(series["migrations"]) == 2
    # 4 hosts off at 270 W for 12 h and 3 for 12 h: the report's 71.28 - 48.6 kWh by 23:00
    assert series["saved_kwh"][-1] == pytest.approx(71.28 - 48.6 - 4 * 0.27, abs=1e-6)


def test_report_plot_refuses_an_unknown_format_before_reading(simulated_day: str,
                                                             tmp_path) -> None:
    result = run("report", "--days", "1", "--plot", str(tmp_path / "history.pdf"),
                 db_url=simulated_day)
    assert result.code == 2 and "choose a file ending in .svg, .png, .html" in result.err
    assert len(result.err.strip().splitlines()) == 1 and not (tmp_path / "history.pdf").exists()
