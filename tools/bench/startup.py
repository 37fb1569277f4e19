"""Benchmark: how long the CLI takes to start, and to load a large scenario file.

'consolidator --help' imports no command module (the commands load lazily); a scenario file
is parsed with PyYAML's C parser where it is installed.

    python tools/bench/startup.py [--runs 5] [--hosts 1000]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def wall(args: list[str], runs: int) -> float:
    """The median seconds of running a command."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(args, capture_output=True, check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--hosts", type=int, default=1000)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import yaml

    from consolidator.emulators.fake.generate import generate
    from consolidator.render import table
    from consolidator.scenario.files import load_scenario

    rows = [["consolidator --help", round(wall([sys.executable, "-m", "consolidator",
                                                  "--help"], args.runs), 3)],
            ["python -c pass (the interpreter alone)",
             round(wall([sys.executable, "-c", "pass"], args.runs), 3)]]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.yaml"
        path.write_text(yaml.safe_dump(generate(args.hosts, per_host=8), sort_keys=False))
        started = time.perf_counter()
        load_scenario(path)
        rows.append([f"load a {path.stat().st_size / 1e6:.1f} MB scenario "
                     f"({args.hosts} hosts)", round(time.perf_counter() - started, 3)])
    print(table(["WHAT", "SECONDS"], rows))


if __name__ == "__main__":
    main()
