"""Benchmark: budgets against Watcher on mixed-host clusters, and plan's end-to-end time.

Issue 16's done-when figures, on generated clusters of four host sizes like its rows 2 and 4
(200 hosts with about 1,840 instances; 1,000 hosts; tools/bench/heldout.py's models):

- ``budget = Watcher``: ``plan --max-migrations M`` (-a auto), with M the migrations Watcher
  needed: it must keep at most as many hosts busy as Watcher did;
- ``no budget``: -a auto without a budget: within ONE host of the lower bound (hosts busy,
  i.e. holding instances; HOSTS ON adds the host N+1 keeps on, which the bound ignores);
- the end-to-end time of ``consolidator plan --scenario FILE`` as a process at 1,000 hosts,
  cold (empty scenario cache) and warm, and the import time of the plan command.

The peer is Watcher's own run when ``--watcher-python PATH`` names the python of a venv with
python-watcher (``PATH tools/bench/watcher_peer.py SCENARIO`` prints {"hosts_busy",
"migrations", "seconds", ...}); without it, the issue's measured numbers (65 / 1,105 and
333 / 5,321), which were measured on clusters of the same shape, not these very ones.

    python tools/bench/front.py [--seed 1] [--hosts 200,1000] [--watcher-python PATH]
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

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

from heldout import CLUSTERS, run_watcher  # noqa: E402

#: Issue 16's measured Watcher runs on mixed clusters: hosts busy, migrations, seconds.
MEASURED = {200: (65, 1105, 2.1), 1000: (333, 5321, 7.9)}


def busy(cluster: Any, draft: Any) -> int:
    """Hosts holding at least one instance after the plan."""
    where = {i.id: i.host for i in cluster.instances}
    where.update({m.instance_id: m.destination for m in draft.migrations})
    return len(set(where.values()))


def timed_plan(python: str, scenario: Path, workdir: Path, cache: Path) -> float:
    """Seconds of one `consolidator plan --scenario FILE` process."""
    env = {**os.environ, "CONSOLIDATOR_CACHE_DIR": str(cache),
           "CONSOLIDATOR_DB_URL": f"sqlite:///{workdir / 'bench.db'}"}
    env.pop("CONSOLIDATOR_CONFIG", None)
    started = time.perf_counter()
    proc = subprocess.run([python, "-m", "consolidator", "plan", "--scenario", str(scenario)],
                          env=env, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if proc.returncode:
        sys.exit(f"front bench: plan failed: {proc.stderr.strip().splitlines()[-1:]}")
    return seconds


def import_seconds(python: str) -> float:
    """The plan command's imports: importing its modules, less a bare interpreter."""
    def wall(code: str) -> float:
        started = time.perf_counter()
        subprocess.run([python, "-c", code], check=True)
        return time.perf_counter() - started
    base = min(wall("pass") for _ in range(3))
    full = min(wall("import consolidator.cli.plans, consolidator.app.planning, "
                    "consolidator.core.front") for _ in range(3))
    return full - base


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--hosts", default="200,1000")
    parser.add_argument("--watcher-python", metavar="PATH",
                        help="python of a venv with python-watcher: run Watcher as the peer")
    args = parser.parse_args()
    if args.watcher_python and not Path(args.watcher_python).is_file():
        sys.exit(f"front bench: --watcher-python {args.watcher_python}: no such file")
    try:
        sizes = [int(n) for n in args.hosts.split(",")]
    except ValueError:
        sys.exit(f"front bench: --hosts {args.hosts!r}: expected counts such as 200,1000")

    import yaml

    from consolidator.core.front import AUTO, Budget, FrontBuilder, plan_within
    from consolidator.core.planner import PlanSettings
    from consolidator.emulators.fake.generate import generate
    from consolidator.render import table
    from consolidator.scenario.files import parse_scenario

    _shape, models, per_host, fill, _gaps = CLUSTERS[1]
    rows: list[list[object]] = []
    timings: list[list[object]] = []
    with tempfile.TemporaryDirectory(prefix="front-bench-") as tmp:
        work = Path(tmp)
        subprocess.run([sys.executable, "-m", "consolidator", "db", "upgrade"], check=True,
                       capture_output=True,
                       env={**os.environ, "CONSOLIDATOR_DB_URL": f"sqlite:///{work / 'bench.db'}"})
        for hosts in sizes:
            doc = generate(hosts, per_host=per_host, seed=args.seed, fill=fill, models=models)
            cluster = parse_scenario(doc).cluster
            name = f"{hosts} of four sizes"
            if args.watcher_python:
                peer = run_watcher(args.watcher_python, doc)
                w_hosts, w_moves, w_secs = peer["hosts_busy"], peer["migrations"], \
                    peer["seconds"]
                source = "watcher (run)"
            else:
                w_hosts, w_moves, w_secs = MEASURED.get(hosts, MEASURED[1000])
                source = "watcher (issue 16)"
            rows.append([name, len(cluster.instances), source, "", w_hosts, w_moves, "", "",
                         "", round(w_secs, 2)])
            for label, budget in (("budget = Watcher", Budget(max_migrations=w_moves)),
                                  ("no budget", Budget())):
                started = time.perf_counter()
                draft = plan_within(FrontBuilder(cluster, PlanSettings()), AUTO, budget)
                seconds = time.perf_counter() - started
                held = busy(cluster, draft)
                verdict = (f"{'yes' if held <= w_hosts else 'NO'} (<= {w_hosts} busy)"
                           if budget.max_migrations is not None else
                           f"{'yes' if held <= draft.lower_bound + 1 else 'NO'} "
                           f"(<= bound + 1)")
                rows.append([name, len(cluster.instances),
                             f"{label}: {draft.choice['algorithm']}"
                             + (f" ({draft.choice['search']})" if draft.choice.get("search")
                                else ""), draft.hosts_after, held,
                             len(draft.migrations), round(draft.choice["moved_gib"]),
                             draft.lower_bound, verdict, round(seconds, 2)])
                print(f"  done: {name}, {label}", file=sys.stderr)
            if hosts >= 1000:
                path = work / f"mixed{hosts}.yaml"
                path.write_text(yaml.safe_dump(doc))
                cache = work / f"cache{hosts}"
                cold = timed_plan(sys.executable, path, work, cache)
                warm = min(timed_plan(sys.executable, path, work, cache) for _ in range(2))
                size = path.stat().st_size / 1e6
                third = round(w_secs / 3, 2)
                timings.append([f"{name} ({size:.1f} MB YAML)", round(cold, 2), round(warm, 2),
                                f"{'yes' if cold < 2 else 'NO'} / {'yes' if warm < 2 else 'NO'}",
                                f"{third} ({'run' if args.watcher_python else 'issue'})",
                                f"{'yes' if cold < third else 'NO'} / "
                                f"{'yes' if warm < third else 'NO'}"])
    print(table(["CLUSTER", "INSTANCES", "RUN", "HOSTS ON", "HOSTS BUSY", "MIGRATIONS",
                 "GIB MOVED", "LOWER BOUND", "TARGET MET", "SECONDS"], rows))
    print()
    imports = import_seconds(sys.executable)
    if timings:
        print(table(["PLAN --SCENARIO, END TO END", "COLD S", "WARM S", "< 2 S (COLD / WARM)",
                     "WATCHER / 3", "< WATCHER / 3"], timings))
    print(f"\nimports of the plan command: {imports:.2f} s (beyond a bare python)")
    print("COLD: the first run on a file (YAML built from libyaml's events, "
          "consolidator/scenario/yaml_loader.py); WARM: later runs, the parsed scenario read "
          "from the cache (CONSOLIDATOR_CACHE_DIR). "
          + ("PEER: Watcher run on each cluster." if args.watcher_python else
             "PEER: the issue's measured Watcher numbers on clusters of the same shape "
             "(pass --watcher-python PATH to run Watcher)."))


if __name__ == "__main__":
    main()
