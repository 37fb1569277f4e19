"""Benchmark: 50 concurrent readers of the API while the daemon applies a 200-migration plan.

A 1,000-host fake cloud with Redfish BMCs (``consolidator fake-cloud serve --bmc``), the
API (``consolidator api``) and the daemon (``consolidator daemon``), each in its own
process, share one SQLite database. A plan of at most 200 migrations is made and approved
with the CLI, then applied through the API (``POST /v1/plans/{id}/apply``, a job the
daemon carries out). The apply runs twice, on a fresh cloud each time: alone, and with
--readers threads (each with its own Keystone token and HTTP session) reading
``GET /v1/hosts`` (all 1,000 hosts) and ``GET /v1/plans`` in turn for --seconds, and on
until the apply ends (so that the whole apply runs under their load). It prints the
readers' p50 and p99 latency and errors, the apply's time (the job's started_at to
finished_at) with and without them and their ratio, and the load average of each run.

    python tools/bench/api_readers.py [--hosts 1000] [--migrations 200] [--readers 50]
                                      [--seconds 60]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import requests
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.functional.waits import wait_until  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
CLOUD = "bench"


def consolidator(*args: str) -> list[str]:
    return [sys.executable, "-m", "consolidator", *args]


def wait_for(predicate: Any, what: str) -> Any:
    """The tests' wait, with a benchmark's patience (a whole 200-migration apply)."""
    return wait_until(predicate, what, timeout=1800.0, interval=0.2)


class Bed:
    """The cloud, the API and the daemon as processes, on one scratch directory."""

    def __init__(self, tmp: Path, hosts: int) -> None:
        from consolidator.emulators.fake.generate import generate

        self.tmp = tmp
        doc = generate(hosts, per_host=8.0, seed=46, fill=0.5)
        for host in doc["hosts"]:
            host["bmc"] = {"driver": "redfish"}
        doc["settings"] = {"migration_bandwidth_mb_s": 8192.0, "service_up_delay_s": 0.1,
                           "bmc_graceful_delay_s": 0.05}
        (tmp / "scenario.yaml").write_text(yaml.safe_dump(doc))
        self.clouds = tmp / "clouds.yaml"
        self.config = tmp / "c.conf"
        self.config.write_text("[daemon]\nschedule = 0 0 1 1 *\njob_interval = 0.2\n"
                               "capacity_watch_interval = 0\n[relief]\ninterval = 0\n"
                               "[api]\njob_timeout = 3600\n")
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        self.bmcs = tmp / "bmc.yaml"
        self.env.update(OS_CLIENT_CONFIG_FILE=str(self.clouds), CONSOLIDATOR_BMC_FILE=str(
                            self.bmcs),
                        CONSOLIDATOR_DB_URL=f"sqlite:///{tmp / 'bench.db'}")
        self.processes: list[subprocess.Popen[str]] = []

    def start(self, *args: str, log: str) -> subprocess.Popen[str]:
        with (self.tmp / log).open("w") as out:
            process = subprocess.Popen(consolidator("--config", str(self.config), *args),
                                       stdout=out, stderr=subprocess.STDOUT, env=self.env,
                                       text=True)
        self.processes.append(process)
        return process

    def cli(self, *args: str) -> str:
        done = subprocess.run(consolidator("--config", str(self.config), "--cloud", CLOUD,
                                           *args), capture_output=True, text=True,
                              env=self.env, timeout=3600, check=False)
        if done.returncode != 0:
            raise SystemExit(f"consolidator {' '.join(args)}: {done.stderr.strip()}")
        return done.stdout.strip()

    def stop(self) -> None:
        for process in reversed(self.processes):
            process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()

    def token(self, persona: str) -> str:
        import openstack

        entry = yaml.safe_load(self.clouds.read_text())["clouds"][f"{CLOUD}-{persona}"]
        return str(openstack.connect(load_yaml_config=False, load_envvars=False,
                                     **entry).auth_token)


def reader(url: str, token: str, until: float, applying: threading.Event,
           latencies: list[tuple[float, float]], errors: list[str]) -> None:
    """Read /v1/hosts and /v1/plans in turn until `until` and the apply's end; each read's
    (start, latency)."""
    session = requests.Session()
    session.headers["X-Auth-Token"] = token
    paths = ("/v1/hosts", "/v1/plans")
    n = 0
    while time.monotonic() < until or applying.is_set():
        path = paths[n % 2]
        n += 1
        started = time.monotonic()
        try:
            answer = session.get(url + path, timeout=120)
            if answer.status_code != 200:
                errors.append(f"{path}: {answer.status_code}")
            else:
                answer.json()
        except requests.RequestException as exc:
            errors.append(f"{path}: {type(exc).__name__}")
            continue
        latencies.append((started, time.monotonic() - started))


def one_run(hosts: int, migrations: int, readers: int, seconds: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        bed = Bed(Path(scratch), hosts)
        try:
            subprocess.run(consolidator("db", "upgrade"), env=bed.env, check=True,
                           capture_output=True, timeout=600)
            bed.start("fake-cloud", "serve", "--scenario", str(bed.tmp / "scenario.yaml"),
                      "--write-clouds-yaml", str(bed.clouds), "--cloud-name", CLOUD,
                      "--bmc", "--write-bmc-yaml", str(bed.bmcs), log="cloud.log")
            wait_for(lambda: bed.clouds.exists() and bed.bmcs.exists(), "the fake cloud")
            snapshot = bed.cli("snapshot")
            plan = bed.cli("plan", "--snapshot", snapshot, "-a", "zoned-bestfit",
                           "--max-migrations", str(migrations), "--format", "id")
            moves = len(yaml.safe_load(bed.cli("plan", "show", plan, "-f", "json"))
                        ["migrations"])
            bed.cli("plan", "approve", plan)
            api_log = bed.tmp / "api.log"
            bed.start("--cloud", CLOUD, "api", "--port", "0", log="api.log")
            line = wait_for(lambda: next((x for x in api_log.read_text().splitlines()
                                          if "http://" in x), None), "the API")
            url = line.split(" on ", 1)[1].split()[0].rstrip("/")
            bed.start("--cloud", CLOUD, "daemon", log="daemon.log")
            admin = {"X-Auth-Token": bed.token("admin")}
            tokens = [bed.token("reader") for _ in range(readers)]
            tag = requests.get(f"{url}/v1/plans/{plan}", headers=admin, timeout=120
                               ).headers["ETag"]
            latencies: list[tuple[float, float]] = []
            errors: list[str] = []
            began = time.monotonic()
            until = began + seconds
            applying = threading.Event()
            applying.set()
            threads = [threading.Thread(target=reader, args=(url, t, until, applying,
                                                             latencies, errors))
                       for t in tokens]
            for thread in threads:
                thread.start()
            job = requests.post(f"{url}/v1/plans/{plan}/apply",
                                headers={**admin, "If-Match": tag}, timeout=120).json()["job"]

            def ended() -> dict[str, Any] | None:
                now = requests.get(f"{url}/v1/jobs/{job['id']}", headers=admin,
                                   timeout=120).json()["job"]
                return now if now["state"] in ("succeeded", "failed", "expired") else None
            done = wait_for(ended, "the apply")
            applying.clear()
            load = os.getloadavg()[0]
            for thread in threads:
                thread.join()
            took = (datetime.fromisoformat(done["finished_at"].replace("Z", "+00:00"))
                    - datetime.fromisoformat(done["started_at"].replace("Z", "+00:00"))
                    ).total_seconds()
            return {"moves": moves, "state": done["state"], "apply_s": took,
                    "latencies": [lat for _, lat in latencies],
                    "first": [lat for at, lat in latencies if at < until],
                    "read_s": time.monotonic() - began, "errors": errors, "load": load}
        finally:
            bed.stop()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--migrations", type=int, default=200)
    parser.add_argument("--readers", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60.0)
    args = parser.parse_args()
    alone = one_run(args.hosts, args.migrations, 0, 0.0)
    busy = one_run(args.hosts, args.migrations, args.readers, args.seconds)
    lat, first = busy["latencies"], busy["first"]
    print(f"{args.hosts} hosts; plan of {busy['moves']} migrations; {args.readers} readers "
          f"for the whole apply ({busy['read_s']:.0f} s)")
    print(f"{'':28} {'value':>10}")
    print(f"{'reads answered':28} {len(lat):>10}")
    print(f"{'read errors':28} {len(busy['errors']):>10}")
    print(f"{'read latency p50 (ms)':28} {1000 * percentile(lat, 0.5):>10.0f}")
    print(f"{'read latency p99 (ms)':28} {1000 * percentile(lat, 0.99):>10.0f}")
    print(f"{'read latency mean (ms)':28} "
          f"{1000 * (statistics.fmean(lat) if lat else float('nan')):>10.0f}")
    print(f"{f'reads in the first {args.seconds:g} s':28} {len(first):>10}")
    print(f"{'  p50 (ms)':28} {1000 * percentile(first, 0.5):>10.0f}")
    print(f"{'  p99 (ms)':28} {1000 * percentile(first, 0.99):>10.0f}")
    print(f"{'apply alone (s)':28} {alone['apply_s']:>10.1f}  ({alone['state']})")
    print(f"{'apply with readers (s)':28} {busy['apply_s']:>10.1f}  ({busy['state']})")
    print(f"{'with / alone':28} {busy['apply_s'] / alone['apply_s']:>10.2f}  (goal: <= 1.10)")
    print(f"{'load average (1 min) alone':28} {alone['load']:>10.1f}")
    print(f"{'load average with readers':28} {busy['load']:>10.1f}")
    if busy["errors"]:
        print("errors:", ", ".join(sorted(set(busy["errors"]))[:5]))


if __name__ == "__main__":
    main()
