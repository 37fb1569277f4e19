"""Benchmark: how long the real Keystone of the tests (tests/realkeystone's fixture,
python -m consolidator.emulators.realkeystone) takes to come up, and its memory.

Each run starts a fresh server in a new directory and waits for its ready.json: the total
(launch to ready, what the session fixture waits), and the server's own phases (importing
Keystone with db_sync, fernet_setup, credential_setup and bootstrap; loading the WSGI
application; creating the project, users, roles and catalog entry through the API);
the rest is starting Python. Then the server's resident memory, and the time of a first
token through openstacksdk.

    python tools/bench/realkeystone.py [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

START_TIMEOUT_S = 600.0


def rss_mib(pid: int) -> float:
    """Resident memory of a process, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one_run(workdir: Path) -> dict[str, float]:
    """Start a server, wait until it is ready, take a token, stop it."""
    import openstack

    launched = time.monotonic()
    process = subprocess.Popen([sys.executable, "-m", "consolidator.emulators.realkeystone",
                                "--workdir", str(workdir)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    try:
        ready = workdir / "ready.json"
        while not ready.exists():
            if process.poll() is not None or time.monotonic() - launched > START_TIMEOUT_S:
                raise SystemExit(f"the real Keystone did not start (see {workdir})")
            time.sleep(0.1)
        total = time.monotonic() - launched
        doc = json.loads(ready.read_text())
        entry = yaml.safe_load(Path(doc["clouds_yaml"]).read_text())["clouds"]["ks-admin"]
        began = time.monotonic()
        assert openstack.connect(load_yaml_config=False, load_envvars=False, **entry).auth_token
        token = time.monotonic() - began
        return {"total_s": total, **doc["phases"],
                "python_s": total - sum(doc["phases"].values()),
                "first_token_s": token, "rss_mib": rss_mib(process.pid)}
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    rows = []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="bench-realkeystone-") as tmp:
            rows.append(one_run(Path(tmp)))
    keys = list(rows[0])
    print("| run | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for n, row in enumerate(rows, 1):
        print(f"| {n} | " + " | ".join(f"{row[k]:.1f}" for k in keys) + " |")


if __name__ == "__main__":
    main()
