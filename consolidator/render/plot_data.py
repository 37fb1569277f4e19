"""The series the pictures draw, and the JSON outputs carry: pure, no plotting library.

``replay_series`` feeds ``simulate trace --plot`` and the ``series`` key of its JSON;
``report_series`` feeds ``report --plot`` from the report's JSON document, so that what a
picture shows is what the JSON says.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from consolidator.core.report import Report, to_json


def allocation_floor_binds(floor_kwh: float, allocation_floor_kwh: float | None) -> bool:
    """Whether Placement's allocation lifts the allocation floor above the physical one
    (by more than 0.5 %): only then do the table and the picture name it."""
    return allocation_floor_kwh is not None and allocation_floor_kwh > 1.005 * floor_kwh


def replay_series(doc: dict[str, Any]) -> dict[str, Any]:
    """Per interval of a replay: the hours since its start, the physical and allocation
    floors (kWh), and per policy the hosts on, the energy (kWh), the hosts overloaded and the
    migrations made."""
    steps = int(doc["steps"])
    step_h = float(doc.get("step_s", 300.0)) / 3600
    return {"hours": [round(k * step_h, 4) for k in range(steps)],
            "floor_kwh": [round(float(x), 6) for x in doc.get("floor_steps", [])],
            "allocation_floor_kwh": [round(float(x), 6)
                                     for x in doc.get("allocation_floor_steps", [])],
            "policies": {r.policy: {"hosts_on": list(r.hosts_on),
                                    "energy_kwh": [round(x, 6) for x in r.energy_steps],
                                    "overloaded": list(r.overloaded),
                                    "migrations": list(r.migration_steps)}
                         for r in doc["results"]}}


def report_series(report: dict[str, Any]) -> dict[str, Any]:
    """From a report's JSON document: hosts on and in all at each snapshot, the energy saved
    so far (kWh, hosts off at the idle watts, as the report counts it), and the migrations
    done per cycle."""
    points = report["hosts_on"]
    idle_kw = float(report["idle_watts"]) / 1000
    saved, total = [], 0.0
    times = [p["time"] for p in points]
    for i, point in enumerate(points):
        if i:
            hours = _hours(times[i - 1], point["time"])
            prev = points[i - 1]
            total += (prev["hosts_total"] - prev["hosts_on"]) * idle_kw * hours
        saved.append(round(total, 6))
    return {"time": times, "hosts_on": [p["hosts_on"] for p in points],
            "hosts_total": [p["hosts_total"] for p in points], "saved_kwh": saved,
            "cycle_time": [c["time"] for c in report["cycles"]],
            "migrations": [c["migrations_done"] for c in report["cycles"]]}


def _hours(start: str, end: str) -> float:
    """Hours between two ISO 8601 times."""
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds() / 3600


def report_series_of(report: Report) -> dict[str, Any]:
    """report_series of a Report (through its JSON document, as the JSON output has it)."""
    return report_series(to_json(report))
