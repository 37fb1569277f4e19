"""The report of a period for the terminal: hosts on per hour, the cycles, the energy."""

from __future__ import annotations

import json
from collections.abc import Sequence

from consolidator.core.report import Cycle, HostsPoint, Report, hourly, to_json
from consolidator.core.wording import duration, plural
from consolidator.render import CHART_WIDTH, count_bar, kv, table
from consolidator.render.fit import fit_table, fit_text, widest


def render_text(report: Report, width: int = 0) -> str:
    """The report for the terminal: the chart of hosts on, the cycles and the energy table;
    fitted to `width` (0: as it is)."""
    fmt = "%Y-%m-%d %H:%M"
    out = [f"cloud {report.cloud}: {report.start.strftime(fmt)} to {report.end.strftime(fmt)} "
           f"UTC", fit_text(_age(report), width), "",
           "Hosts powered on ('#' on, '.' off), the last snapshot of each hour:"]
    rows = hourly(report.points)
    out.append(_hosts_table(rows, width) if rows else "  no snapshots in this period")
    out += ["", "Cycles (the plans that ran):"]
    out.append(_cycles_table(report.cycles, width) if report.cycles
               else "  no plan ran in this period")
    e = report.energy
    out += ["", fit_text(f"Estimated energy ({report.idle_watts:g} W per host on, "
                         f"{e.hours:.1f} h covered by snapshots):", width),
            table(["", "POLICY", "NO POLICY"],
                  [["kWh in period", f"{e.kwh_policy:.1f}", f"{e.kwh_no_policy:.1f}"],
                   ["kWh per day", f"{e.kwh_per_day_policy:.1f}", f"{e.kwh_per_day_no_policy:.1f}"],
                   ["kWh per year (estimated)", f"{e.kwh_per_year_policy:.0f}",
                    f"{e.kwh_per_year_no_policy:.0f}"],
                   ["reduction", f"{e.reduction_pct:.1f} %", "0.0 %"]], align="lrr")]
    if e.kwh_measured is not None and e.kwh_per_day_measured is not None:
        out += ["", fit_text(f"Measured energy (BMC readings; hosts on without one at "
                             f"{report.idle_watts:g} W): {e.kwh_measured:.1f} kWh in the "
                             f"period, {e.kwh_per_day_measured:.1f} kWh per day", width)]
    out += ["", kv([("migrations done", sum(c.migrations_done for c in report.cycles)),
                    ("hosts powered off", sum(c.hosts_powered_off for c in report.cycles))])]
    return "\n".join(out)


def _hosts_table(rows: list[HostsPoint], width: int) -> str:
    """Hosts on per hour: the chart narrows (44, 22, 11 characters) until it fits `width`."""
    fmt = "%Y-%m-%d %H:%M"
    widest_cloud = max((p.hosts_total for p in rows), default=0)
    text = ""
    for chart in (CHART_WIDTH, CHART_WIDTH // 2, CHART_WIDTH // 4):
        text = fit_table(["TIME (UTC)", "HOSTS", "ON", "SPARE", "INSTANCES", "MEASURED"],
                         [[p.time.strftime(fmt),
                           count_bar(p.hosts_on, p.hosts_total, widest_cloud, chart),
                           f"{p.hosts_on}/{p.hosts_total}", p.spare, p.instances,
                           _measured(p)] for p in rows], "llrrrr", width, wraps={5: 8})
        if width <= 0 or widest(text) <= width:
            break
    return text


def _cycles_table(cycles: Sequence[Cycle], width: int) -> str:
    """The plans of the period; where its nine columns do not fit `width`, migrations (done
    of planned, failed) and power (off of planned, on) take one column each."""
    fmt = "%Y-%m-%d %H:%M"

    def asked(c: Cycle) -> str:
        return f"{c.asked} -> {c.algorithm}" if c.asked else c.algorithm

    text = table(["TIME (UTC)", "PLAN", "ALGORITHM", "STATUS", "PLANNED", "MIGRATED",
                  "FAILED", "POWERED OFF", "POWERED ON"],
                 [[c.time.strftime(fmt), c.plan_id[:8], asked(c), c.status,
                   c.migrations_planned, c.migrations_done, c.migrations_failed,
                   f"{c.hosts_powered_off}/{c.power_off_planned}", c.hosts_powered_on]
                  for c in cycles], align="llllrrrrr")
    if width <= 0 or widest(text) <= width:
        return text
    return fit_table(["TIME (UTC)", "PLAN", "ALGORITHM", "STATUS", "MIGRATIONS", "POWER"],
                     [[c.time.strftime(fmt), c.plan_id[:8], asked(c), c.status,
                       f"{c.migrations_done} of {c.migrations_planned}, "
                       f"{c.migrations_failed} failed",
                       f"{c.hosts_powered_off} of {c.power_off_planned} off, "
                       f"{c.hosts_powered_on} on"] for c in cycles],
                     "llllll", width, wraps={2: 10, 4: 10, 5: 10})


def _age(report: Report) -> str:
    """How old the data are: the report reads the database, never the live cloud."""
    if report.latest_snapshot is None:
        return "from the database only: the cloud is not contacted"
    taken = report.latest_snapshot.strftime("%Y-%m-%d %H:%M UTC")
    ago = ""
    if report.read_at is not None:
        seconds = max((report.read_at - report.latest_snapshot).total_seconds(), 0.0)
        ago = f", {duration(seconds)} ago"
    return (f"from the database: the newest snapshot is from {taken}{ago}; "
            f"'consolidator snapshot' records the current state")


def _measured(point: HostsPoint) -> str:
    if point.measured_watts is None:
        return "-"
    return f"{point.measured_watts:.0f} W ({plural(point.measured_hosts, 'host')})"


def render_json(report: Report) -> str:
    """The report as JSON (its shape: consolidator/core/report.py)."""
    return json.dumps(to_json(report), indent=2)
