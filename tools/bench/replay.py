"""Benchmark: the trace replay over the 10 PlanetLab days, each policy's median beside the
published Table V (Beloglazov & Buyya 2012) and CloudSim 3.0.3 as measured on this machine.

Each row is one day and one policy: energy (kWh), SLATAH (paper and CloudSim), PDM,
migrations, hosts on, the day's floor and the seconds taken; then the medians per policy.

    python tools/bench/replay.py [--traces DIR] [--days 20110303,...] [--policy NAME ...]
        [--cpu-allocation-ratio N]

Without --traces, the ten PlanetLab days bundled with the package.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace
from pathlib import Path

#: Published Table V (10-day medians) and CloudSim 3.0.3 here (docs/replay.rst): kWh, migrations.
PUBLISHED = {"npa": (2419.2, 0), "thr-mmt-0.8": (89.92, 17180), "lr-mmt-1.2": (88.17, 11850)}
CLOUDSIM = {"thr-mmt-0.8": (187.6, 26746), "lr-mmt-1.2": (162.2, 27277)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", default=None, help="a folder of day folders "
                        "[default: the bundled days]")
    parser.add_argument("--cpu-allocation-ratio", type=float, default=4.0)
    parser.add_argument("--days", default="")
    parser.add_argument("--policy", action="append", dest="policies")
    parser.add_argument("--config", default=None, help="the daemon's config (consolidator)")
    args = parser.parse_args()
    from consolidator.app.context import AppContext
    from consolidator.app.replay import POLICIES, run_policy
    from consolidator.core.replay.datacentre import cloudsim_datacentre
    from consolidator.core.replay.trace import end_steps, floor_kwh
    from consolidator.render import table
    from consolidator.scenario.traces import bundled_days, load_planetlab

    if args.traces:
        days = args.days.split(",") if args.days else sorted(
            p.name for p in Path(args.traces).iterdir() if p.is_dir())
    else:
        days = args.days.split(",") if args.days else bundled_days()
    policies = tuple(args.policies or POLICIES)
    ctx = AppContext(config_file=args.config)
    dc = replace(cloudsim_datacentre(), cpu_allocation_ratio=args.cpu_allocation_ratio)
    rows, by_policy = [], {p: [] for p in policies}
    wall = time.perf_counter()
    for day in days:
        trace = load_planetlab(Path(args.traces) / day if args.traces else day)
        floor = floor_kwh(trace, dc.best_joules_per_mip, end_steps(trace))
        for name in policies:
            started = time.perf_counter()
            r = run_policy(trace, dc, name, ctx)
            seconds = time.perf_counter() - started
            by_policy[name].append(r)
            rows.append([day, name, trace.vms, round(r.energy_kwh, 2), f"{r.slatah:.2%}",
                         f"{r.slatah_cloudsim:.2%}", f"{r.pdm:.3%}", r.migrations,
                         round(r.hosts_on_mean, 1), round(floor, 1), round(seconds, 1)])
            print(*rows[-1], sep="  ", flush=True)
    print()
    print(table(["day", "policy", "VMs", "kWh", "SLATAH", "SLATAH (CloudSim)", "PDM",
                 "migrations", "hosts on", "floor kWh", "s"], rows))
    medians = []
    for name, results in by_policy.items():
        published, cloudsim = PUBLISHED.get(name), CLOUDSIM.get(name)
        medians.append([name, round(statistics.median(r.energy_kwh for r in results), 2),
                        f"{statistics.median(r.slatah for r in results):.2%}",
                        f"{statistics.median(r.slatah_cloudsim for r in results):.2%}",
                        int(statistics.median(r.migrations for r in results)),
                        published[0] if published else "-", published[1] if published else "-",
                        cloudsim[0] if cloudsim else "-", cloudsim[1] if cloudsim else "-"])
    print()
    print(f"medians over {len(days)} days ({time.perf_counter() - wall:.0f} s in all)")
    print(table(["policy", "kWh", "SLATAH", "SLATAH (CloudSim)", "migrations",
                 "Table V kWh", "Table V migr.", "CloudSim kWh", "CloudSim migr."], medians))


if __name__ == "__main__":
    main()
