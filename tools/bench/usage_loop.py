"""Benchmark: the daemon's defaults over the bundled PlanetLab days, at CPU allocation ratios
4 and 16, against issue 35's targets.

The consolidator policy (the daemon's defaults, or --config) beside the project's lr-mmt-1.2
on CloudSim's data centre (800 hosts, G4 and G5), whose Placement overcommits CPU at each
ratio; lr-mmt-1.2 packs on used MIPS only, so one run serves both ratios. Every row runs
CloudSim's workload (a VM ends at its first two zero samples in a row) and counts every
migration the executor started. Per day and ratio: the floor, energy and its ratio to the
floor, SLATAH as the paper defines it and as CloudSim counts it, PDM, migrations, hosts on;
then the medians per ratio and the targets. "bound x floor" is the allocation floor
(core/replay/bound.py): the least energy any placement within Placement's CPU allocation ratio
can draw while it serves the demand, as a multiple of the physical floor; where it is above a
target, no policy can meet that target at that ratio. The targets: each day energy <= 1.35
x floor, SLATAH <= 0.5 %, <= 3,000 migrations, better than lr-mmt-1.2 on energy and SLATAH
at once; the medians <= 1.30 x floor with <= 2,500 migrations.

    python tools/bench/usage_loop.py [--days all|20110303,...] [--ratios 4,16]
        [--config FILE] [--rows FILE.jsonl] [--from-rows FILE.jsonl]

A replay of one day takes 2-3 minutes of CPU; --rows appends each row as it is measured.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import replace

#: Issue 35's targets: per day (x floor, SLATAH, migrations) and the medians.
DAY_TARGETS = (1.35, 0.005, 3000)
MEDIAN_TARGETS = (1.30, 2500)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", default="all")
    parser.add_argument("--ratios", default="4,16")
    parser.add_argument("--config", default=None, help="[default: the daemon's defaults]")
    parser.add_argument("--rows", default=None, help="append each row to this JSON-lines file")
    parser.add_argument("--from-rows", default=None,
                        help="print the tables of rows measured earlier (a --rows file)")
    args = parser.parse_args()
    if args.from_rows:
        from consolidator.render import table as render_table

        with open(args.from_rows) as done:
            print(report([json.loads(line) for line in done if line.strip()], render_table))
        return
    from consolidator.app.config import load_config
    from consolidator.app.context import AppContext
    from consolidator.app.replay import run_policy
    from consolidator.core.replay.bound import allocation_floor_kwh
    from consolidator.core.replay.datacentre import cloudsim_datacentre
    from consolidator.core.replay.trace import end_steps, floor_kwh
    from consolidator.render import table
    from consolidator.scenario.traces import bundled_days, load_planetlab

    ctx = AppContext(_config=load_config(args.config, required=bool(args.config)))
    days = bundled_days() if args.days == "all" else args.days.split(",")
    ratios = [float(r) for r in args.ratios.split(",")]
    rows: list[dict] = []
    for day in days:
        trace = load_planetlab(day)
        dc = cloudsim_datacentre()
        ends = end_steps(trace)
        floor = floor_kwh(trace, dc.best_joules_per_mip, ends)
        bound = {r: allocation_floor_kwh(trace, replace(dc, cpu_allocation_ratio=r), ends)
                 for r in ratios}
        runs = [("lr-mmt-1.2", None)] + [("consolidator", r) for r in ratios]
        for name, ratio in runs:
            started = time.perf_counter()
            r = run_policy(trace, replace(dc, cpu_allocation_ratio=ratio or 4.0), name,
                           ctx if name == "consolidator" else None)
            for each in ([ratio] if ratio else ratios):
                rows.append({"day": day, "ratio": each, "policy": name, "floor": floor,
                             "bound": bound[each] / floor,
                             "kwh": r.energy_kwh, "x": r.energy_kwh / floor,
                             "slatah": r.slatah, "slatah_cs": r.slatah_cloudsim,
                             "pdm": r.pdm, "migrations": r.migrations,
                             "hosts": r.hosts_on_mean, "used": r.hosts_used,
                             "s": round(time.perf_counter() - started)})
                print(json.dumps(rows[-1]), flush=True)
                if args.rows:
                    with open(args.rows, "a") as out:
                        out.write(json.dumps(rows[-1]) + "\n")
    print(report(rows, table))


def report(rows: list[dict], table) -> str:
    """The per-day table, the medians per ratio and policy, and the targets."""
    def cells(r: dict, first: str) -> list:
        return [first, f"{r['ratio']:g}", r["policy"], f"{r['floor']:.1f}",
                f"{r.get('bound', 0):.3f}", f"{r['kwh']:.1f}", f"{r['x']:.3f}",
                f"{r['slatah']:.2%}", f"{r['slatah_cs']:.2%}",
                f"{r['pdm']:.3%}", f"{r['migrations']:,.0f}", f"{r['hosts']:.1f}",
                f"{r['used']:,.0f}" if "used" in r else "-"]
    head = ["day", "ratio", "policy", "floor kWh", "bound x floor", "kWh", "x floor",
            "SLATAH", "SLATAH (CloudSim)", "PDM", "migrations", "hosts on", "hosts used"]
    lines = [table(head, [cells(r, r["day"]) for r in rows]), ""]
    medians, verdicts = [], []
    for ratio in sorted({r["ratio"] for r in rows}):
        for policy in ("consolidator", "lr-mmt-1.2"):
            mine = [r for r in rows if r["ratio"] == ratio and r["policy"] == policy]
            if mine:
                medians.append(cells(median_row(mine), f"median/{len(mine)}"))
        ours = {r["day"]: r for r in rows if r["ratio"] == ratio and r["policy"] ==
                "consolidator"}
        lr = {r["day"]: r for r in rows if r["policy"] == "lr-mmt-1.2" and r["ratio"] == ratio}
        for day, r in ours.items():
            misses = [what for what, ok in (
                (f"energy {r['x']:.2f} x floor", r["x"] <= DAY_TARGETS[0]),
                (f"SLATAH {r['slatah']:.2%}", r["slatah"] <= DAY_TARGETS[1]),
                (f"{r['migrations']} migrations", r["migrations"] <= DAY_TARGETS[2]),
                ("not better than lr-mmt-1.2", day not in lr or (
                    r["kwh"] < lr[day]["kwh"] and r["slatah"] < lr[day]["slatah"])))
                if not ok]
            if r.get("bound", 0) > DAY_TARGETS[0]:
                misses.append(f"no placement within the allocation reaches {DAY_TARGETS[0]} "
                              f"x floor (allocation floor {r['bound']:.3f} x floor)")
            verdicts.append(f"{day} at {ratio:g}:1: " + ("met" if not misses else
                                                         "missed: " + ", ".join(misses)))
        if ours:
            x = statistics.median(r["x"] for r in ours.values())
            moves = statistics.median(r["migrations"] for r in ours.values())
            least = statistics.median(r.get("bound", 0) for r in ours.values())
            verdicts.append(f"medians at {ratio:g}:1: {x:.3f} x floor (<= 1.30: "
                            f"{x <= MEDIAN_TARGETS[0]}; the allocation floor's median: "
                            f"{least:.3f}), {moves:,.0f} migrations (<= 2,500: "
                            f"{moves <= MEDIAN_TARGETS[1]})")
    lines += ["medians", table(head, medians), "", "targets", *verdicts]
    return "\n".join(lines)


def median_row(rows: list[dict]) -> dict:
    """Each measured column's median over the rows that hold it (a --rows file may mix rows
    written before a column was added with rows written after), with the first row's day,
    policy and ratio."""
    keys = dict.fromkeys(k for r in rows for k in r)
    return {k: rows[0][k] if k in ("day", "policy", "ratio") else
            statistics.median(r[k] for r in rows if k in r) for k in keys}


if __name__ == "__main__":
    main()
