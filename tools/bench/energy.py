"""Benchmark: the energy objective against the default (hosts) one, on generated clouds of
two hardware generations.

The clouds come from consolidator.emulators.fake.generate's five host models. The old generation
is the two smallest and the largest (an old four-socket box): more idle watts per core than the
new 64- and 96-core hosts, so "largest first" and "most efficient first" differ. Each row plans
the same cluster with one algorithm and one objective: hosts left on, migrations, the idle watts
of the hosts powered off, how many of them are old, and the seconds taken.

    python tools/bench/energy.py [--sizes 100,500] [--algorithms firstfit,zoned-bestfit,hvp-light]
"""

from __future__ import annotations

import argparse
import time

#: Idle watts per host model (by vcpus): old generation 32, 48 and 128 cores, new 64 and 96.
IDLE_WATTS = {32: 280.0, 48: 300.0, 64: 150.0, 96: 200.0, 128: 650.0}
OLD = (32, 48, 128)


def measure(hosts: int, algorithm: str, objective: str, seed: int = 1) -> list[object]:
    """Plan one generated cluster; one table row."""
    from consolidator.core.energy_objective import energy_plan
    from consolidator.core.planner import plan_cluster
    from consolidator.emulators.fake.generate import generate
    from consolidator.scenario.files import parse_scenario

    cluster = parse_scenario(generate(hosts, per_host=10, seed=seed, fill=0.5)).cluster
    idle = {h.name: IDLE_WATTS[h.vcpus] for h in cluster.hosts}
    name, options = ("hvp", {"light": True}) if algorithm == "hvp-light" else (algorithm, {})
    started = time.perf_counter()
    if objective == "energy":
        draft = energy_plan(cluster, name, idle, fallback=270.0, options=options)
    else:
        draft = plan_cluster(cluster, name, options=options)
    seconds = time.perf_counter() - started
    size = {h.name: h.vcpus for h in cluster.hosts}
    old = sum(1 for h in draft.power_off if size[h] in OLD)
    return [hosts, algorithm, objective, draft.hosts_after, len(draft.migrations),
            f"{sum(idle[h] for h in draft.power_off):.0f}", f"{old}/{len(draft.power_off)}",
            draft.algorithm, f"{seconds:.2f}"]


def main() -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,500")
    parser.add_argument("--algorithms", default="firstfit,zoned-bestfit,hvp-light")
    args = parser.parse_args()
    from consolidator.render import table

    rows = [measure(int(size), algorithm, objective)
            for size in args.sizes.split(",") for algorithm in args.algorithms.split(",")
            for objective in ("hosts", "energy")]
    print(table(["HOSTS", "ALGORITHM", "OBJECTIVE", "HOSTS AFTER", "MIGRATIONS",
                 "IDLE W OFF", "OLD OFF", "MADE BY", "SECONDS"], rows,
                align="lllrrrrlr"))


if __name__ == "__main__":
    main()
