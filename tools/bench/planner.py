"""Benchmark: plan heterogeneous clusters of 100, 1,000 and 10,000 hosts with every algorithm.

About 10 instances per host from a mix of flavors (consolidator.emulators.fake.generate). Each
row runs in a fresh child process, so that its peak RSS is its own. The seconds are the whole
plan: the algorithm, waves, bounds and the independent check.

    python tools/bench/planner.py [--sizes 100,1000,10000] [--algorithms firstfit,hvp-light]
        [--classes classic,pcpu+vgpu]

CLASSES classic is VCPU, MEMORY_MB and DISK_GB only; pcpu+vgpu gives every fourth host PCPU
and VGPU inventories and pins one instance on each of them (two more columns), to show what
the extra resource classes cost.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_ALGORITHMS = "firstfit,zoned-bestfit,hvp-light,hvp,importance-3d"
#: Sizes above which an algorithm is skipped by default (too slow to be worth waiting for).
LIMITS = {"hvp": 1000, "importance-3d": 1000}


def with_extra_classes(doc: dict) -> dict:
    """Every fourth host gets PCPU (its cores) and 4 VGPU; one instance on it is pinned."""
    special = {h["name"]: h for h in doc["hosts"][::4]}
    for host in special.values():
        host["resources"] = {"PCPU": host["vcpus"], "VGPU": 4}
    for inst in doc["instances"]:
        host = special.pop(inst["host"], None)
        if host is not None:
            inst["resources"] = {"PCPU": inst["vcpus"], "VCPU": 0}
    return doc


def measure(algorithm: str, hosts: int, seed: int, classes: str = "classic") -> dict:
    """In a child: generate, plan once, report."""
    from consolidator.core.planner import plan_cluster
    from consolidator.emulators.fake.generate import generate
    from consolidator.scenario.files import parse_scenario

    doc = generate(hosts, per_host=10, seed=seed, fill=0.5)
    if classes != "classic":
        doc = with_extra_classes(doc)
    cluster = parse_scenario(doc).cluster
    name, options = (("hvp", {"light": True}) if algorithm == "hvp-light"
                     else (algorithm, {}))
    started = time.perf_counter()
    draft = plan_cluster(cluster, name, options=options)
    seconds = time.perf_counter() - started
    return {"instances": len(cluster.instances), "before": draft.hosts_before,
            "after": draft.hosts_after, "lower_bound": draft.lower_bound,
            "migrations": len(draft.migrations), "migrations_lb": draft.migrations_lower_bound,
            "seconds": seconds,
            "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--algorithms", default=DEFAULT_ALGORITHMS)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--all", action="store_true", help="ignore the per-algorithm size limits")
    parser.add_argument("--classes", default="classic")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.child:
        print(json.dumps(measure(args.child[0], int(args.child[1]), args.seed,
                                 args.child[2])))
        return
    from consolidator.render import table

    rows = []
    runs = [(h, a, c) for h in (int(s) for s in args.sizes.split(","))
            for a in args.algorithms.split(",") for c in args.classes.split(",")]
    for hosts, algorithm, classes in runs:
        if not args.all and hosts > LIMITS.get(algorithm, hosts):
            continue
        out = subprocess.run([sys.executable, __file__, "--child", algorithm, str(hosts),
                              classes, "--seed", str(args.seed)], capture_output=True,
                             text=True)
        if out.returncode:
            rows.append([hosts, algorithm, classes, "-", "-", "-", "-", "-", "-", "-",
                         "failed: " + out.stderr.strip().splitlines()[-1][:40]])
            continue
        r = json.loads(out.stdout.strip().splitlines()[-1])
        gap = (r["after"] - r["lower_bound"]) / max(r["lower_bound"], 1)
        rows.append([hosts, algorithm, classes, r["instances"], r["before"], r["after"],
                     r["lower_bound"], f"{gap:.1%}", f"{r['migrations']}/{r['migrations_lb']}",
                     round(r["seconds"], 2), round(r["rss_mib"])])
        print(f"  done: {hosts} hosts, {algorithm}, {classes}", file=sys.stderr)
    print(table(["HOSTS", "ALGORITHM", "CLASSES", "INSTANCES", "BEFORE", "AFTER", "LOWER BOUND",
                 "GAP", "MIGRATIONS/LB", "SECONDS", "PEAK RSS MIB"], rows))


if __name__ == "__main__":
    main()
