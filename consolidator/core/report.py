"""History of a cloud from its stored snapshots, plans and journal: hosts on, cycles, energy.

Pure: it takes loaded snapshots, plans and journal entries and returns a Report, which
consolidator.render.report shows as a terminal chart and tables (like figure 7 and table II
of paper 004), and to_json as JSON.

Energy: every host powered on draws the idle watts ([energy] idle_watts, 270 W in 004).
Measured energy uses the draw the BMCs reported at each snapshot instead (a host on without a
reading counts at the idle watts); it is absent (null) when no snapshot has readings.
The hosts on are a step function: each snapshot's count holds until the next snapshot, and
the last one until the end of the period. "No policy" keeps every host of each snapshot on.
The cloud is not contacted: the report says when its newest snapshot was taken. Cycles are
the plans that ran (running, succeeded or failed), not those proposed and never applied.
Per day and per year are the covered hours scaled to 24 h and to 365 days.

JSON shape (``consolidator report --format json``); times are ISO 8601 in UTC::

    {"cloud": "alto",
     "period": {"from": "...", "to": "...", "days": 1.0},
     "idle_watts": 270.0,
     "latest_snapshot": "...", "read_at": "...",
     "hosts_on": [{"time": "...", "hosts_on": 8, "hosts_total": 11, "spare": 2,
                   "instances": 150}],
     "cycles": [{"time": "...", "plan_id": "...", "algorithm": "zoned-bestfit",
                 "asked": "auto", "ranking": null, "status": "succeeded", "migrations_planned": 4,
                 "migrations_done": 4, "migrations_failed": 0, "power_off_planned": 1,
                 "hosts_powered_off": 1, "hosts_powered_on": 0}],
     "energy": {"hours": 24.0, "kwh_policy": 45.36, "kwh_no_policy": 71.28,
                "kwh_per_day_policy": 45.36, "kwh_per_day_no_policy": 71.28,
                "kwh_per_year_policy": 16556.4, "kwh_per_year_no_policy": 26017.2,
                "reduction_pct": 36.36, "kwh_measured": 40.1,
                "kwh_per_day_measured": 40.1}}
    ("asked" is what -a asked when another algorithm made the plan (auto), else null; each
    hosts_on point also has "measured_watts" (null without readings) and "measured_hosts")
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from consolidator.core.energy_model import Reading
from consolidator.core.journal_entry import SUCCEEDED, Entry
from consolidator.core.model import Cluster
from consolidator.core.plan import StoredPlan

HOURS_PER_YEAR = 365 * 24


@dataclass(frozen=True)
class HostsPoint:
    """One snapshot's count of hosts powered on, hosts in all, spare hosts and instances."""

    time: datetime
    hosts_on: int
    hosts_total: int
    spare: int
    instances: int
    #: The draw its BMCs reported in all, and how many hosts reported (None: no readings).
    measured_watts: float | None = None
    measured_hosts: int = 0


@dataclass(frozen=True)
class Cycle:
    """One plan of the period: what it planned and what the journal shows was done."""

    time: datetime
    plan_id: str
    algorithm: str
    ranking: str | None
    status: str
    #: What was asked when it differs from the algorithm that made the plan (auto), or None.
    asked: str | None
    migrations_planned: int
    migrations_done: int
    migrations_failed: int
    power_off_planned: int
    hosts_powered_off: int
    hosts_powered_on: int


@dataclass(frozen=True)
class Energy:
    """Estimated energy with the policy and without it (every host on), as in 004's table II."""

    hours: float
    kwh_policy: float
    kwh_no_policy: float
    kwh_per_day_policy: float
    kwh_per_day_no_policy: float
    kwh_per_year_policy: float
    kwh_per_year_no_policy: float
    reduction_pct: float
    #: From the BMCs' readings (hosts on without one count at the idle watts); None when no
    #: snapshot of the period has readings.
    kwh_measured: float | None = None
    kwh_per_day_measured: float | None = None


@dataclass(frozen=True)
class Report:
    """The history of one cloud over a period."""

    cloud: str
    start: datetime
    end: datetime
    idle_watts: float
    points: tuple[HostsPoint, ...]
    cycles: tuple[Cycle, ...]
    energy: Energy
    latest_snapshot: datetime | None = None   # the cloud's newest snapshot, in or after the period
    read_at: datetime | None = None           # when the report was read from the database


def hosts_point(time: datetime, cluster: Cluster, readings: Sequence[Reading] = ()
                ) -> HostsPoint:
    """Count a snapshot's hosts: on means not powered off and nova-compute up; spare, also
    empty; and sum the draw its BMCs reported."""
    on = [h.power != "off" and h.state == "up" for h in cluster.hosts]
    population = cluster.population
    spare = sum(1 for i, is_on in enumerate(on) if is_on and population[i] == 0)
    return HostsPoint(time=time, hosts_on=sum(on), hosts_total=len(cluster.hosts), spare=spare,
                      instances=len(cluster.instances),
                      measured_watts=round(sum(r.watts for r in readings), 1) if readings
                      else None, measured_hosts=len(readings))


def cycle(plan: StoredPlan, entries: Iterable[Entry]) -> Cycle:
    """A plan and its journal rows as one cycle; each target counts once (resumes repeat rows)."""
    done: dict[str, set[str]] = {}
    failed: set[str] = set()
    for entry in entries:
        if entry.state == SUCCEEDED:
            done.setdefault(entry.action, set()).add(entry.target)
        elif entry.action == "migrate" and entry.state == "failed":
            failed.add(entry.target)
    migrated = done.get("migrate", set())
    draft = plan.draft
    asked = (draft.choice or {}).get("asked")
    return Cycle(time=plan.created_at, plan_id=plan.id, algorithm=draft.algorithm,
                 ranking=draft.ranking, status=plan.status,
                 asked=asked if asked and asked != draft.algorithm else None,
                 migrations_planned=len(draft.migrations), migrations_done=len(migrated),
                 migrations_failed=len(failed - migrated),
                 power_off_planned=len(draft.power_off),
                 hosts_powered_off=len(done.get("power_off", ())),
                 hosts_powered_on=len(done.get("power_on", ())))


def energy(points: Sequence[HostsPoint], end: datetime, idle_watts: float) -> Energy:
    """kWh with and without the policy: hosts on as a step function of the snapshots up to end."""
    ordered = sorted(points, key=lambda p: p.time)
    hours = on_hours = total_hours = measured_wh = 0.0
    ends = [p.time for p in ordered[1:]] + [end]
    for point, until in zip(ordered, ends[:len(ordered)], strict=True):
        span = max((until - point.time).total_seconds(), 0.0) / 3600
        hours += span
        on_hours += point.hosts_on * span
        total_hours += point.hosts_total * span
        measured_wh += span * ((point.measured_watts or 0.0) + idle_watts * max(
            0, point.hosts_on - point.measured_hosts))
    kwh_policy = idle_watts * on_hours / 1000
    kwh_none = idle_watts * total_hours / 1000
    scale = 1 / hours if hours else 0.0
    return Energy(hours=hours, kwh_policy=kwh_policy, kwh_no_policy=kwh_none,
                  kwh_per_day_policy=kwh_policy * scale * 24,
                  kwh_per_day_no_policy=kwh_none * scale * 24,
                  kwh_per_year_policy=kwh_policy * scale * HOURS_PER_YEAR,
                  kwh_per_year_no_policy=kwh_none * scale * HOURS_PER_YEAR,
                  reduction_pct=100 * (1 - kwh_policy / kwh_none) if kwh_none else 0.0,
                  **_measured(ordered, measured_wh / 1000, scale))


def _measured(points: Sequence[HostsPoint], kwh: float, scale: float) -> dict[str, Any]:
    if not any(p.measured_watts is not None for p in points):
        return {}
    return {"kwh_measured": kwh, "kwh_per_day_measured": kwh * scale * 24}


#: The plan states of a plan that ran: only these are cycles of the report.
RAN = ("running", "succeeded", "failed")


def build(cloud: str, start: datetime, end: datetime, idle_watts: float,
          points: Iterable[HostsPoint], cycles: Iterable[Cycle], *,
          latest_snapshot: datetime | None = None, read_at: datetime | None = None) -> Report:
    """The report of a period: the points and the plans that ran inside it, and their energy."""
    inside = tuple(sorted((p for p in points if start <= p.time <= end), key=lambda p: p.time))
    kept = tuple(sorted((c for c in cycles if start <= c.time <= end and c.status in RAN),
                        key=lambda c: c.time))
    return Report(cloud=cloud, start=start, end=end, idle_watts=idle_watts, points=inside,
                  cycles=kept, energy=energy(inside, end, idle_watts),
                  latest_snapshot=latest_snapshot, read_at=read_at)


def to_json(report: Report) -> dict[str, Any]:
    """The report in the JSON shape of the module docstring."""
    def stamped(item: HostsPoint | Cycle) -> dict[str, Any]:
        return {**asdict(item), "time": item.time.isoformat()}

    return {"cloud": report.cloud,
            "period": {"from": report.start.isoformat(), "to": report.end.isoformat(),
                       "days": (report.end - report.start).total_seconds() / 86400},
            "idle_watts": report.idle_watts,
            "latest_snapshot": _iso(report.latest_snapshot), "read_at": _iso(report.read_at),
            "hosts_on": [stamped(p) for p in report.points],
            "cycles": [stamped(c) for c in report.cycles],
            "energy": {k: round(v, 3) if v is not None else None
                       for k, v in asdict(report.energy).items()}}


def hourly(points: Sequence[HostsPoint]) -> list[HostsPoint]:
    """One point per clock hour: the last snapshot taken in it."""
    by_hour: dict[datetime, HostsPoint] = {}
    for point in sorted(points, key=lambda p: p.time):
        by_hour[point.time.replace(minute=0, second=0, microsecond=0)] = point
    return list(by_hour.values())


def _iso(time: datetime | None) -> str | None:
    return time.isoformat() if time is not None else None
