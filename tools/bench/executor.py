"""Benchmark: 1,000 live migrations through the executor at concurrency 1, 4, 16 and 64.

The fake cloud runs in its own process (``consolidator fake-cloud serve``), each migration
taking about 0.1 s of simulated time, so the CPU time measured here is the executor's own
(polling, verification, journal writes). No BMCs: the hosts emptied are left on.

    python tools/bench/executor.py [--migrations 1000] [--concurrency 1,4,16,64]
                                   [--poll-interval S] [--scenario FILE]

With --scenario (e.g. consolidator/data/alto-cloud.yaml, the demo's cloud) it applies a
firstfit plan of that cloud instead of the generated one (--migrations is then ignored).

Without --poll-interval the executor polls with its defaults ([executor] poll_first and
poll_interval), as an operator's apply does.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def scenario(migrations: int) -> dict:
    """Receivers with room, then sources of 10 small instances each: firstfit moves them all."""
    sources = max(migrations // 10, 1)
    hosts = [{"name": f"r{n:04d}", "vcpus": 256, "memory_mb": 1048576, "disk_gb": 20000}
             for n in range(max(sources // 10, 1) + 1)]
    hosts += [{"name": f"s{n:04d}", "vcpus": 32, "memory_mb": 131072, "disk_gb": 2000}
              for n in range(sources)]
    instances = [{"name": f"vm{n:05d}", "host": f"s{n // 10:04d}", "vcpus": 1,
                  "memory_mb": 102, "disk_gb": 1} for n in range(sources * 10)]
    return {"hosts": hosts, "instances": instances,
            "settings": {"migration_bandwidth_mb_s": 1024.0}}


def run_once(concurrency: int, migrations: int, poll: float | None,
             source: Path | None = None) -> list[object]:
    from consolidator.app.apply import PlanRun
    from consolidator.app.config import Config
    from consolidator.app.context import AppContext
    from consolidator.app.planning import PlanRequest, make_plan
    from consolidator.app.snapshots import record_snapshot
    from consolidator.openstack.connection import connect
    from consolidator.scenario.files import dump_document
    from consolidator.store.db import make_engine, upgrade
    from consolidator.store.plans import set_status

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.json"
        doc = yaml.safe_load(source.read_text()) if source else scenario(migrations)
        dump_document(doc, path)
        clouds = Path(tmp) / "clouds.yaml"
        server = subprocess.Popen([sys.executable, "-m", "consolidator", "fake-cloud", "serve",
                                   "--scenario", str(path), "--write-clouds-yaml", str(clouds),
                                   "--cloud-name", "bench"], stdout=subprocess.DEVNULL)
        try:
            while not clouds.exists():
                time.sleep(0.05)
            os.environ["OS_CLIENT_CONFIG_FILE"] = str(clouds)
            engine = make_engine(f"sqlite:///{tmp}/b.db")
            upgrade(engine)
            conn = connect("bench")
            values: dict = {("planner", "max_migrations_per_host"): 10,
                            ("executor", "max_parallel"): concurrency}
            if poll is not None:
                values["executor", "poll_interval"] = poll
            config = Config(values=values)
            ctx = AppContext.of(config=config, engine=engine, connect=lambda: conn,
                                power=lambda _host: None)
            snap, _ = record_snapshot(ctx)
            plan = make_plan(ctx, snap, PlanRequest(algorithm="firstfit"))
            set_status(engine, plan.id, "approved")
            run = PlanRun(ctx, plan.id)
            cpu0 = resource.getrusage(resource.RUSAGE_SELF)
            started = time.perf_counter()
            outcome = run.run()
            wall = time.perf_counter() - started
            cpu1 = resource.getrusage(resource.RUSAGE_SELF)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    return [concurrency, len(outcome.migrated), len(outcome.failed), round(wall, 1),
            round(len(outcome.migrated) / wall, 1), round(cpu, 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--migrations", type=int, default=1000)
    parser.add_argument("--concurrency", default="1,4,16,64")
    parser.add_argument("--scenario", type=Path, default=None,
                        help="a scenario file to apply a plan of instead")
    parser.add_argument("--poll-interval", type=float, default=None,
                        help="[executor] poll_interval (default: the config's default)")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from consolidator.render import table

    rows = [run_once(int(c), args.migrations, args.poll_interval, args.scenario)
            for c in args.concurrency.split(",")]
    print(table(["CONCURRENCY", "MIGRATED", "FAILED", "WALL S", "MIGRATIONS/S",
                 "EXECUTOR CPU S"], rows))


if __name__ == "__main__":
    main()
