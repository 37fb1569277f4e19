"""The trace replay's table (one row per policy) and its chart of hosts on over the day."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from consolidator.core.wording import plural
from consolidator.render import table

#: Chart rows (hours of 12 five-minute samples, or the trace's own share of it).
CHART_ROWS = 24
CHART_WIDTH = 50


def replay_table(doc: dict[str, Any]) -> str:
    """The policies side by side, with the day's floor."""
    rows = []
    for r in doc["results"]:
        rows.append([r.policy, f"{r.energy_kwh:,.2f}", f"{r.slatah:.2%}",
                     f"{r.slatah_cloudsim:.2%}", f"{r.pdm:.3%}", f"{r.slav:.5%}",
                     f"{r.esv:.5f}", f"{r.migrations:,}", f"{r.hosts_on_mean:.1f}"])
    head = (f"{plural(doc['vms'], 'VM')} on {plural(doc['hosts'], 'host')}, "
            f"{plural(doc['steps'], 'sample')}; physical floor {doc['floor_kwh']:,.1f} kWh (the "
            f"demand of the VMs while they run)")
    body = table(["policy", "energy kWh", "SLATAH", "SLATAH (CloudSim)", "PDM", "SLAV",
                  "ESV", "migrations", "hosts on"], rows, align="lrrrrrrrr")
    notes = [f"note: {n}" for n in shared_notes(doc["results"])]
    notes += [f"note: {r.policy} used less than the physical floor because {r.unserved:.1%} of "
              f"the demand was not served (hosts at 100 % CPU)"
              for r in doc["results"] if r.energy_kwh < doc["floor_kwh"]]
    return "\n".join([head, "", body, *([""] + notes if notes else [])])


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
    """The JSON contract: floor_kwh, hosts, vms, steps and policies."""
    return {"floor_kwh": doc["floor_kwh"], "hosts": doc["hosts"], "vms": doc["vms"],
            "steps": doc["steps"], "policies": [r.as_dict() for r in doc["results"]]}
