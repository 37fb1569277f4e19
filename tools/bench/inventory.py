"""Benchmark: snapshot a served cloud of 1,000 and 10,000 servers.

Serves a synthetic cloud with `consolidator fake-cloud serve` in a separate process, then reads
it in fresh child processes: once with raw JSON paging (what `consolidator snapshot` does, the
database write included) and once by building openstacksdk resource objects, for comparison.

    python tools/bench/inventory.py [--rows 100x1000,1000x10000] [--skip-sdk]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def measure(mode: str, cloud: str, db_url: str) -> dict:
    """Run in a child: read the cloud once and report seconds and peak RSS."""
    from consolidator.app.config import Config
    from consolidator.app.context import AppContext
    from consolidator.app.snapshots import record_snapshot
    from consolidator.openstack.connection import connect
    from consolidator.store.db import make_engine, upgrade

    conn = connect(cloud)
    conn.compute.get_endpoint_data()  # authenticate before the clock starts
    started = time.perf_counter()
    if mode == "raw":
        engine = make_engine(db_url)
        upgrade(engine)
        started = time.perf_counter()
        _, inventory = record_snapshot(AppContext.of(config=Config(), engine=engine,
                                                     connect=lambda: conn))
        count = len(inventory.cluster.instances)
    else:
        count = sum(1 for _ in conn.compute.servers(details=True, all_projects=True))
    seconds = time.perf_counter() - started
    rss_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"servers": count, "seconds": seconds, "rss_mib": rss_mib}


def serve(scenario: Path, clouds: Path) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "consolidator", "fake-cloud", "serve",
                             "--scenario", str(scenario), "--write-clouds-yaml", str(clouds),
                             "--cloud-name", "bench"], stdout=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not clouds.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("the fake cloud did not start")
        time.sleep(0.1)
    return proc


def child(mode: str, env: dict[str, str], db_url: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", mode, "--db-url", db_url],
                         env=env, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="100x1000,1000x10000",
                        help="comma-separated HOSTSxSERVERS rows")
    parser.add_argument("--skip-sdk", action="store_true",
                        help="skip the SDK-object comparison (about 6 ms a server)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--db-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.child, "bench", args.db_url)))
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from consolidator.emulators.fake.generate import generate
    from consolidator.render import table
    from consolidator.scenario.files import dump_document

    rows = []
    for spec in args.rows.split(","):
        hosts, servers = (int(x) for x in spec.lower().split("x"))
        with tempfile.TemporaryDirectory() as tmp:
            scenario = Path(tmp) / "cloud.json"
            doc = generate(hosts, per_host=servers / hosts, fill=0.9)
            dump_document(doc, scenario)
            clouds = Path(tmp) / "clouds.yaml"
            proc = serve(scenario, clouds)
            env = {**os.environ, "OS_CLIENT_CONFIG_FILE": str(clouds), "OS_CLOUD": "bench"}
            try:
                raw = child("raw", env, f"sqlite:///{tmp}/bench.db")
                sdk = None if args.skip_sdk else child("sdk", env, "")
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=30)
        rows.append([hosts, raw["servers"], round(raw["seconds"], 2),
                     round(sdk["seconds"], 2) if sdk else None,
                     int(raw["servers"] / raw["seconds"]), round(raw["rss_mib"], 1)])
    print(table(["HOSTS", "SERVERS", "RAW S (+DB)", "SDK OBJECTS S", "SERVERS/S (RAW)",
                 "PEAK RSS MIB (RAW)"], rows))


if __name__ == "__main__":
    main()
