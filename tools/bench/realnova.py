"""Benchmark: the fake and the real-Nova backends side by side.

Start-up: how long `consolidator fake-cloud serve` takes to be ready (for the real Nova:
its control plane, then booting every server on its host) and its resident memory, for a few
cloud sizes; from them, how many hosts and servers fit in 24 GiB (a linear fit). Executor
throughput: live migrations per second at --max-parallel 1, 4 and 16, each migration
'copying memory' for 0.1 s on both backends, from 12 source hosts of 4 servers each (Nova
runs one live migration at a time per source compute).

    python tools/bench/realnova.py [--sizes 5x25,20x100,50x300] [--migrations 48]
                                   [--concurrency 1,4,16] [--backends fake,nova]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
BUDGET_MIB = 24 * 1024
START_TIMEOUT_S = 1800.0


def sized(hosts: int, servers: int) -> dict[str, Any]:
    """hosts of 64 vCPUs and 256 GiB, with servers spread round-robin."""
    return {"hosts": [{"name": f"h{n:03d}", "vcpus": 64, "memory_mb": 262144, "disk_gb": 4000,
                       "cpu_allocation_ratio": 4.0} for n in range(hosts)],
            "instances": [{"name": f"vm{k:05d}", "host": f"h{k % hosts:03d}", "vcpus": 1,
                           "memory_mb": 1024, "disk_gb": 10} for k in range(servers)]}


def movers(migrations: int) -> dict[str, Any]:
    """Two receivers with room, then sources of 4 small servers: firstfit moves them all."""
    sources = max(migrations // 4, 1)
    hosts = [{"name": f"r{n}", "vcpus": 256, "memory_mb": 1048576, "disk_gb": 20000}
             for n in range(2)]
    hosts += [{"name": f"s{n:03d}", "vcpus": 32, "memory_mb": 131072, "disk_gb": 2000}
              for n in range(sources)]
    instances = [{"name": f"vm{n:04d}", "host": f"s{n // 4:03d}", "vcpus": 1,
                  "memory_mb": 102, "disk_gb": 1} for n in range(sources * 4)]
    return {"hosts": hosts, "instances": instances,
            "settings": {"migration_bandwidth_mb_s": 1024.0}}


class Served:
    """`consolidator fake-cloud serve` in a child process, on either backend."""

    def __init__(self, backend: str, doc: dict[str, Any], tmp: Path) -> None:
        scenario, self.clouds = tmp / "scenario.yaml", tmp / "clouds.yaml"
        scenario.write_text(yaml.safe_dump(doc, sort_keys=False))
        args = [sys.executable, "-m", "consolidator", "fake-cloud", "serve", "--scenario",
                str(scenario), "--write-clouds-yaml", str(self.clouds), "--cloud-name", "bench"]
        if backend == "nova":
            args += ["--backend", "nova", "--migration-seconds", "0.1",
                     "--log-file", str(tmp / "nova.log")]
        self.log = tmp / "served.log"
        started = time.perf_counter()
        with self.log.open("w") as out:
            self.process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        while not self.clouds.exists():
            if self.process.poll() is not None or time.perf_counter() - started > START_TIMEOUT_S:
                raise RuntimeError(f"{backend} did not start:\n{self.log.read_text()}")
            time.sleep(0.1)
        self.ready_s = time.perf_counter() - started
        self.rss_mib = rss_mib(self.process.pid)
        self.boot_s = boot_seconds(self.log.read_text())

    def stop(self) -> None:
        """SIGTERM, then wait."""
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def rss_mib(pid: int) -> float:
    """A process's resident memory."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def boot_seconds(log: str) -> float | None:
    """The real Nova's 'N servers ACTIVE on their hosts in S s' line, if any."""
    for line in log.splitlines():
        if "servers ACTIVE on their hosts in" in line:
            return float(line.rsplit(" in ", 1)[1].split()[0])
    return None


def startup(backend: str, hosts: int, servers: int) -> list[Any]:
    """One start-up row."""
    with tempfile.TemporaryDirectory() as tmp:
        served = Served(backend, sized(hosts, servers), Path(tmp))
        served.stop()
    boot = served.boot_s
    return [backend, hosts, servers, round(served.ready_s, 1),
            "-" if boot is None else round(boot, 1), round(served.rss_mib)]


def fit_24gib(rows: list[list[Any]]) -> str:
    """Hosts and servers in 24 GiB, from RSS = base + per_server * servers (hosts in step)."""
    if len(rows) < 2:
        return "needs two sizes"
    (_, _, s0, _, _, m0), (_, h1, s1, _, _, m1) = rows[0], rows[-1]
    per_server = (m1 - m0) / max(s1 - s0, 1)
    if per_server <= 0:
        return f"no growth measured between {s0} and {s1} servers"
    servers = (BUDGET_MIB - m0) / per_server + s0
    hosts = servers * h1 / s1
    return (f"about {hosts:,.0f} hosts and {servers:,.0f} servers "
            f"({per_server * 1024:.0f} KiB per server with {s1 // h1} servers per host)")


def throughput(backend: str, concurrency: int, migrations: int, poll: float) -> list[Any]:
    """One row: the executor's live migrations per second through this backend (the
    snapshot, plan, approval and run of the CLI's use cases, without BMCs)."""
    from consolidator.app.apply import PlanRun
    from consolidator.app.config import Config
    from consolidator.app.context import AppContext
    from consolidator.app.planning import PlanRequest, make_plan
    from consolidator.app.review import approve
    from consolidator.app.snapshots import record_snapshot
    from consolidator.store.db import make_engine, upgrade

    with tempfile.TemporaryDirectory() as tmp:
        served = Served(backend, movers(migrations), Path(tmp))
        try:
            os.environ["OS_CLIENT_CONFIG_FILE"] = str(served.clouds)
            config = Config(values={("planner", "max_migrations_per_host"): 16,
                                    ("executor", "poll_interval"): poll,
                                    ("executor", "migration_timeout"): 300})
            engine = make_engine(f"sqlite:///{tmp}/b.db")
            upgrade(engine)
            ctx = AppContext(cloud="bench", power=lambda _host: None, _config=config,
                             _engine=engine)
            snapshot, _ = record_snapshot(ctx)
            plan = make_plan(ctx, snapshot, PlanRequest(algorithm="firstfit"))
            approve(ctx, plan.id, reason="benchmark")
            run = PlanRun(ctx, plan.id, max_parallel=concurrency)
            started = time.perf_counter()
            outcome = run.run()
            wall = time.perf_counter() - started
        finally:
            served.stop()
    return [backend, concurrency, len(outcome.migrated), len(outcome.failed), round(wall, 1),
            round(len(outcome.migrated) / wall, 2)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="5x25,20x100,50x300",
                        help="HOSTSxSERVERS,... for the start-up table")
    parser.add_argument("--migrations", type=int, default=48)
    parser.add_argument("--concurrency", default="1,4,16")
    parser.add_argument("--poll-interval", type=float, default=1.0,
                        help="the executor's poll interval (each migration in flight polls "
                             "two GETs per interval; the real Nova serves them on one core)")
    parser.add_argument("--backends", default="fake,nova")
    parser.add_argument("--only", choices=["startup", "throughput"],
                        help="run one of the two tables")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from consolidator.render import table

    backends = args.backends.split(",")
    sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes.split(",")]
    if args.only != "throughput":
        rows = [startup(b, h, s) for b in backends for h, s in sizes]
        print(table(["BACKEND", "HOSTS", "SERVERS", "READY S", "BOOT S", "RSS MIB"], rows))
        for backend in backends:
            print(f"{backend}: in 24 GiB, {fit_24gib([r for r in rows if r[0] == backend])}")
        print(flush=True)
    if args.only == "startup":
        return
    moves = [throughput(b, int(c), args.migrations, args.poll_interval) for b in backends
             for c in args.concurrency.split(",")]
    print(table(["BACKEND", "MAX PARALLEL", "MIGRATED", "FAILED", "WALL S", "MIGRATIONS/S"],
                moves))


if __name__ == "__main__":
    main()
