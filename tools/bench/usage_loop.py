"""Benchmark: the usage loop in the trace replay, against issue 25's targets.

The consolidator policy with the shipped replay settings (etc/consolidator/replay.conf: ucac
plans and relief every 5 minutes) beside the project's lr-mmt-1.2, on CloudSim's data centre
(800 hosts, G4 and G5) whose Placement overcommits CPU at --ratio (16 by default, so that
usage, not Placement, binds), per day and as medians; then the targets: energy <= 142.7 kWh
on 20110303 (0.85 x CloudSim 3.0.3's LR-MMT-1.2), SLATAH <= 0.5 %, migrations <= 5,530, and
the consolidator row better than lr-mmt-1.2 on energy and SLATAH at once.

Both rows run CloudSim's workload (a VM ends at its first two zero samples in a row, as
CloudSim 3.0.3 ran the LR-MMT figures the targets come from) unless --workload full.

    python tools/bench/usage_loop.py [--days 20110303,...] [--config FILE] [--ratio 16]
        [--workload cloudsim|full]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

TRACES = "/work/shared/traces/planetlab"
CONFIG = Path(__file__).resolve().parents[2] / "etc" / "consolidator" / "replay.conf"
#: Issue 25's targets: 0.85 x CloudSim's LR-MMT-1.2 energy, SLATAH, a fifth of its migrations
#: (20110303; the 10-day medians against 162.2 kWh and 27,277 migrations).
TARGETS = {"20110303": (142.7, 0.005, 5530), "median": (0.85 * 162.2, 0.005, 27277 / 5)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", default=TRACES)
    parser.add_argument("--days", default="20110303")
    parser.add_argument("--config", default=str(CONFIG))
    parser.add_argument("--ratio", type=float, default=16.0)
    parser.add_argument("--workload", choices=("cloudsim", "full"), default="cloudsim",
                        help="cloudsim (VMs end as in CloudSim 3.0.3, as in the runs the "
                             "targets come from) or full (every VM all day)")
    args = parser.parse_args()
    from consolidator.app.config import load_config
    from consolidator.app.context import AppContext
    from consolidator.app.replay import run_policy
    from consolidator.core.replay.datacentre import G4, G5, DataCentre
    from consolidator.render import table
    from consolidator.scenario.traces import load_planetlab

    ctx = AppContext(_config=load_config(args.config, required=True))
    dc = DataCentre.of([(G4, 400), (G5, 400)], cpu_allocation_ratio=args.ratio)
    rows, results = [], {"consolidator": [], "lr-mmt-1.2": []}
    for day in args.days.split(","):
        trace = load_planetlab(Path(args.traces) / day)
        for name in results:
            started = time.perf_counter()
            r = run_policy(trace, dc, name, ctx if name == "consolidator" else None,
                           cloudsim_workload=args.workload == "cloudsim")
            results[name].append(r)
            rows.append([day, name, round(r.energy_kwh, 2), f"{r.slatah:.2%}",
                         f"{r.slatah_cloudsim:.2%}", r.migrations, round(r.hosts_on_mean, 1),
                         round(time.perf_counter() - started)])
            print(*rows[-1], sep="  ", flush=True)
    print(table(["day", "policy", "kWh", "SLATAH", "SLATAH (CloudSim)", "migrations",
                 "hosts on", "s"], rows))
    ours, lr = results["consolidator"], results["lr-mmt-1.2"]
    kwh = statistics.median(r.energy_kwh for r in ours)
    sla = statistics.median(r.slatah for r in ours)
    moves = statistics.median(r.migrations for r in ours)
    energy_t, sla_t, moves_t = TARGETS["20110303" if args.days == "20110303" else "median"]
    better = kwh < statistics.median(r.energy_kwh for r in lr) and \
        sla < statistics.median(r.slatah for r in lr)
    print(f"\ntargets ({'20110303' if args.days == '20110303' else 'medians'}): "
          f"energy {kwh:.1f} <= {energy_t:.1f} kWh: {kwh <= energy_t}; SLATAH {sla:.2%} "
          f"<= 0.5 %: {sla <= sla_t}; migrations {moves:.0f} <= {moves_t:.0f}: "
          f"{moves <= moves_t}; better than lr-mmt-1.2 on energy and SLATAH: {better}")


if __name__ == "__main__":
    main()
