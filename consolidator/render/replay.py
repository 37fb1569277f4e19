"""The trace replay's table (one row per policy) and its chart of hosts on over the day;
several days' table with the medians."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from consolidator.core.wording import plural
from consolidator.render import table
from consolidator.render.plot_data import allocation_floor_binds, replay_series

#: Chart rows (hours of 12 five-minute samples, or the trace's own share of it).
CHART_ROWS = 24
CHART_WIDTH = 50


def replay_table(doc: dict[str, Any]) -> str:
    """The policies side by side, with the day's floor."""
    rows = []
    for r in doc["results"]:
        rows.append([r.policy, f"{r.energy_kwh:,.2f}", f"{r.slatah:.2%}",
                     f"{r.slatah_cloudsim:.2%}", f"{r.pdm:.3%}", f"{r.slav:.5%}",
                     f"{r.esv:.5f}", f"{r.migrations:,}", f"{r.hosts_on_mean:.1f}",
                     f"{r.hosts_used:,}"])
    head = (f"{plural(doc['vms'], 'VM')} on {plural(doc['hosts'], 'host')}, "
            f"{plural(doc['steps'], 'sample')}; physical floor {doc['floor_kwh']:,.1f} kWh (the "
            f"demand of the VMs while they run){_allocation_floor(doc)}")
    body = table(["policy", "energy kWh", "SLATAH", "SLATAH (CloudSim)", "PDM", "SLAV",
                  "ESV", "migrations", "hosts on", "hosts used"], rows, align="lrrrrrrrrr")
    notes = [f"note: {n}" for n in shared_notes(doc["results"])]
    notes += [f"note: {r.policy} used less than the physical floor because {r.unserved:.1%} of "
              f"the demand was not served (hosts at 100 % CPU)"
              for r in doc["results"] if r.energy_kwh < doc["floor_kwh"]]
    return "\n".join([head, "", body, *([""] + notes if notes else [])])


def _allocation_floor(doc: dict[str, Any]) -> str:
    """The allocation floor, where Placement's CPU allocation lifts it above the physical."""
    bound = doc.get("allocation_floor_kwh")
    if not allocation_floor_binds(doc["floor_kwh"], bound):
        return ""
    return (f"; allocation floor {bound:,.1f} kWh (the least any placement within Placement's "
            f"CPU allocation ratio {doc['cpu_allocation_ratio']:g} can draw)")


def shared_notes(results: Sequence[Any]) -> list[str]:
    """The rows' notes, a note that several rows share ("<policy>: <text>" with the same
    text) once, naming them all."""
    named: dict[str, list[str]] = {}
    for r in results:
        for note in r.notes:
            policy, sep, text = note.partition(": ")
            key = text if sep and policy == r.policy else note
            named.setdefault(key, [])
            if key != note:
                named[key].append(r.policy)
    return [f"{', '.join(who)}: {text}" if who else text for text, who in named.items()]


def hosts_chart(doc: dict[str, Any], policies: Sequence[str] | None = None) -> str:
    """Hosts on over the trace, one line per chunk of samples, one bar per policy."""
    results = [r for r in doc["results"] if policies is None or r.policy in policies]
    results = [r for r in results if r.policy != "npa"] or results
    if not results:
        return ""
    steps = len(results[0].hosts_on)
    chunk = max(steps // CHART_ROWS, 1)
    widest = max(max(r.hosts_on) for r in results) or 1
    marks = "#*+o=x"
    lines = [f"hosts on over the trace (mean of each {chunk} samples; full width = {widest})"]
    lines += [f"  {marks[i % len(marks)]} {r.policy}" for i, r in enumerate(results)]
    for start in range(0, steps, chunk):
        for i, r in enumerate(results):
            part = r.hosts_on[start:start + chunk]
            mean = sum(part) / len(part)
            hours = start * doc.get("step_s", 300.0) / 3600
            label = f"{int(hours):02d}:{round(hours % 1 * 60):02d}" if i == 0 else "     "
            width = round(mean / widest * CHART_WIDTH)
            lines.append(f"{label} {marks[i % len(marks)] * width} {mean:.0f}")
    return "\n".join(lines)


def replay_json(doc: dict[str, Any]) -> dict[str, Any]:
    """The JSON contract: floor_kwh, allocation_floor_kwh, hosts, vms, steps and policies;
    and the series the picture draws (render/plot_data.py)."""
    return {"floor_kwh": doc["floor_kwh"],
            "allocation_floor_kwh": doc["allocation_floor_kwh"], "hosts": doc["hosts"],
            "vms": doc["vms"], "steps": doc["steps"],
            "policies": [r.as_dict() for r in doc["results"]],
            "series": replay_series(doc)}


def day_rows(days: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per day and policy: the day's floor and allocation floor, energy and its ratio
    to the floor, both SLATAH figures, PDM, migrations, hosts on and hosts used."""
    return [{"day": d["day"], "floor_kwh": d["floor_kwh"],
             "allocation_floor_kwh": d["allocation_floor_kwh"], **r.as_dict(),
             "x_floor": round(r.energy_kwh / d["floor_kwh"], 3) if d["floor_kwh"] else None}
            for d in days for r in d["results"]]


def median_rows(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per policy, the medians over the days of day_rows."""
    keys = ("floor_kwh", "allocation_floor_kwh", "energy_kwh", "x_floor", "slatah",
            "slatah_cloudsim", "pdm", "migrations", "hosts_on_mean", "hosts_used")
    policies = list(dict.fromkeys(r["policy"] for r in rows))
    return [{"policy": p, "days": sum(r["policy"] == p for r in rows),
             **{k: statistics.median(r[k] for r in rows if r["policy"] == p
                                     and r[k] is not None) for k in keys}}
            for p in policies]


def days_table(days: Sequence[dict[str, Any]]) -> str:
    """The per-day table and the medians over the days."""
    rows = day_rows(days)
    head = ["day", "policy", "floor kWh", "allocation floor", "energy kWh", "x floor",
            "SLATAH", "SLATAH (CloudSim)", "PDM", "migrations", "hosts on", "hosts used"]

    def cells(r: dict[str, Any], first: str) -> list[str]:
        return [first, r["policy"], f"{r['floor_kwh']:,.1f}",
                f"{r['allocation_floor_kwh']:,.1f}", f"{r['energy_kwh']:,.2f}",
                f"{r['x_floor']:.2f}", f"{r['slatah']:.2%}", f"{r['slatah_cloudsim']:.2%}",
                f"{r['pdm']:.3%}", f"{r['migrations']:,.0f}", f"{r['hosts_on_mean']:.1f}",
                f"{r['hosts_used']:,.0f}"]
    ratio = days[0].get("cpu_allocation_ratio") if days else None
    title = (f"{plural(len(days), 'day')} of PlanetLab on {plural(days[0]['hosts'], 'host')}"
             + (f", CPU allocation ratio {ratio:g}" if ratio else "")) if days else ""
    body = table(head, [cells(r, r["day"]) for r in rows], align="llrrrrrrrrrr")
    medians = table(head, [cells(r, "median") for r in median_rows(rows)],
                    align="llrrrrrrrrrr")
    notes = [f"note: {d['day']}: {n}" for d in days for n in shared_notes(d["results"])
             if "did not finish" in n or "failed" in n]
    return "\n".join([title, "", body, "", f"medians over {plural(len(days), 'day')}",
                      medians, *([""] + notes if notes else [])])


def days_json(days: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Several days: each day's rows and the medians (no per-step series)."""
    rows = day_rows(days)
    return {"days": rows, "medians": median_rows(rows)}
