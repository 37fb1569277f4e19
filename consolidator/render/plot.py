"""Pictures of a replay and of a cloud's history (--plot FILE): .svg, .png or .html.

matplotlib is an optional extra (``pip install 'consolidator[plot]'``). Each picture carries
the series it draws (render/plot_data.py), as the JSON output gives them: in an SVG's
``<dc:description>``, a PNG's ``consolidator-series`` text chunk, or an HTML page's
``<script type="application/json" id="consolidator-series">``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from consolidator.core.errors import UsageError
from consolidator.render.plot_data import allocation_floor_binds

#: The picture formats --plot writes, by suffix.
FORMATS = (".svg", ".png", ".html")
INSTALL = "pip install 'consolidator[plot]'"
#: The key under which a picture carries its series.
SERIES_KEY = "consolidator-series"


def check_plot_target(path: str) -> None:
    """Refuse, before any work, a --plot file of an unknown format or without matplotlib."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise UsageError(f"--plot {path}: choose a file ending in {', '.join(FORMATS)}")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError(f"--plot needs matplotlib, which is not installed: {INSTALL}") \
            from None
    if not Path(path).resolve().parent.is_dir():
        raise UsageError(f"--plot {path}: its folder does not exist")


def plot_replay(series: dict[str, Any], path: str, title: str = "") -> None:
    """Per policy over the trace: hosts on, power against the floor, hosts overloaded and
    migrations per step (npa left out when other policies are drawn)."""
    from matplotlib.figure import Figure

    hours = series["hours"]
    step_h = hours[1] - hours[0] if len(hours) > 1 else 5 / 60
    drawn = {p: s for p, s in series["policies"].items() if p != "npa"} or \
        series["policies"]
    figure = Figure(figsize=(10, 11), layout="constrained")
    axes = figure.subplots(4, 1, sharex=True)
    for policy, s in drawn.items():
        axes[0].plot(hours, s["hosts_on"], label=policy, linewidth=1.2)
        axes[1].plot(hours, [e / step_h for e in s["energy_kwh"]], label=policy,
                     linewidth=1.2)
        axes[2].plot(hours, s["overloaded"], label=policy, linewidth=1.0)
        axes[3].plot(hours, s["migrations"], label=policy, linewidth=1.0)
    if series["floor_kwh"]:
        axes[1].plot(hours, [e / step_h for e in series["floor_kwh"]], "k--",
                     label="physical floor", linewidth=1.0)
    placeable = series.get("allocation_floor_kwh") or []
    if placeable and allocation_floor_binds(sum(series["floor_kwh"]), sum(placeable)):
        axes[1].plot(hours, [e / step_h for e in placeable], "k:",
                     label="allocation floor (Placement)", linewidth=1.0)
    labels = ("hosts on", "power (kW)", "hosts overloaded", "migrations per step")
    for ax, label in zip(axes, labels, strict=True):
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    axes[0].legend(loc="upper right", fontsize="small")
    axes[1].legend(loc="upper right", fontsize="small")
    axes[3].set_xlabel("hours since the start of the trace")
    if title:
        figure.suptitle(title)
    _save(figure, path, series, title)


def plot_report(series: dict[str, Any], path: str, title: str = "") -> None:
    """A cloud's history: hosts on (and in all), migrations per cycle, energy saved."""
    from datetime import datetime

    from matplotlib.figure import Figure

    times = [datetime.fromisoformat(t) for t in series["time"]]
    cycles = [datetime.fromisoformat(t) for t in series["cycle_time"]]
    figure = Figure(figsize=(10, 8), layout="constrained")
    axes = figure.subplots(3, 1, sharex=True)
    axes[0].step(times, series["hosts_on"], where="post", label="hosts on")
    axes[0].step(times, series["hosts_total"], where="post", label="hosts in all",
                 linestyle="--")
    axes[0].legend(loc="upper right", fontsize="small")
    axes[1].bar(cycles, series["migrations"], width=0.02, label="migrations")
    axes[2].plot(times, series["saved_kwh"])
    for ax, label in zip(axes, ("hosts", "migrations per cycle", "energy saved (kWh)"),
                         strict=True):
        ax.set_ylabel(label)
        ax.grid(True, alpha=0.3)
    figure.autofmt_xdate()
    if title:
        figure.suptitle(title)
    _save(figure, path, series, title)


def _save(figure: Any, path: str, series: dict[str, Any], title: str) -> None:
    """Write the figure in the format of path's suffix, carrying its series; a file that
    cannot be written is one UsageError."""
    text = json.dumps(series, separators=(",", ":"))
    suffix = Path(path).suffix.lower()
    try:
        if suffix == ".png":
            figure.savefig(path, format="png", dpi=100, metadata={SERIES_KEY: text})
        elif suffix == ".svg":
            figure.savefig(path, format="svg", metadata={"Description": text})
        else:
            svg = io.StringIO()
            figure.savefig(svg, format="svg")
            Path(path).write_text(_html(svg.getvalue(), text, title), encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"--plot {path}: {exc.strerror or exc}") from None


def _html(svg: str, series: str, title: str) -> str:
    """A page with the picture inline and its series as JSON."""
    from html import escape

    body = svg[svg.index("<svg"):]
    safe = series.replace("</", "<\\/")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">"
            f"<title>{escape(title or 'consolidator')}</title></head><body>\n{body}\n"
            f"<script type=\"application/json\" id=\"{SERIES_KEY}\">{safe}</script>\n"
            f"</body></html>\n")
