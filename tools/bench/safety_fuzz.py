"""Long run of the randomized safety test (issues 33 and 45): at least --steps steps of every
actor and fault interleaved at random on the fake cloud, every invariant checked every 50 ms
while steps run, after every step, and once the operator settled the world.

Unlike the test, a violation does not stop the run: it is counted by invariant (the first of
each kind is printed) and the example goes on. At the end it prints a table: steps, examples,
steps by kind, faults injected by kind, actions by kind, violations by invariant (the target
is 0 of each).

    python tools/bench/safety_fuzz.py [--steps 5000] [--steps-per-example 40] [--seed N]
        [--min-faults N] [--max-minutes M] [--log FILE] [--jobs J]
        [--store sqlite|postgresql|mariadb]

--min-faults N keeps running rounds past --steps until every fault kind (the machine's
FAULT_KINDS and the store's own) has been injected at least N times; the table lists every
kind, 0 included, and says whether the target was met.

--store postgresql keeps each world's database on PostgreSQL: a throw-away server this
bench starts from /usr/lib/postgresql/*/bin (which the store fault stops and starts), or,
with --pg-url (default: CONSOLIDATOR_TEST_PG_URL), that server (whose tables the store fault
locks instead). --store mariadb does the same on MariaDB: a throw-away mariadbd from
Debian's mariadb-server, or with --mysql-url (default: CONSOLIDATOR_TEST_MYSQL_URL) that
server, whose tables the store fault locks (LOCK TABLES ... WRITE).

It stops early, after the round under way, once --max-minutes have passed (the table says
how many steps it reached, and which fault kinds are short of --min-faults), and prints the
table so far after every round to stderr.

--jobs J runs J processes side by side (a step mostly waits on the subprocesses and servers
it starts), process i from seed N + 1000 i with its share of the steps and of --min-faults
(so that their sum meets it), each its own cloud, database and log (FILE.i; its own tables
in FILE.i.err); the table adds theirs up, and the sum so far goes to stderr as it changes.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from hypothesis import HealthCheck, Phase, settings  # noqa: E402
from hypothesis import seed as fixed_seed  # noqa: E402
from hypothesis.errors import Flaky  # noqa: E402
from hypothesis.stateful import run_state_machine_as_test  # noqa: E402

from tests.functional import safety_machine  # noqa: E402
from tests.functional.safety_invariants import INVARIANTS  # noqa: E402
from tests.functional.safety_store import (  # noqa: E402
    MYSQL_ENV,
    PG_ENV,
    MariaDbServer,
    PgServer,
)

#: Seconds between the checks of the jobs' counts (--jobs: the sum so far, to stderr).
SUM_EVERY_S = 30.0


def table(rows: list[tuple[str, object]]) -> str:
    """Two aligned columns."""
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5000, help="run at least this many steps")
    parser.add_argument("--steps-per-example", type=int, default=40)
    parser.add_argument("--seed", type=int, default=33)
    parser.add_argument("--min-faults", type=int, default=0,
                        help="run past --steps until each fault kind was injected this often")
    parser.add_argument("--max-minutes", type=float, default=0.0,
                        help="start no new round after this long (0: no limit)")
    parser.add_argument("--log", help="write every step, command and violation here")
    parser.add_argument("--jobs", type=int, default=1, help="processes side by side")
    parser.add_argument("--store", choices=("sqlite", "postgresql", "mariadb"),
                        default="sqlite", help="where the worlds keep their database")
    parser.add_argument("--pg-url", default=os.environ.get(PG_ENV, ""),
                        help="a PostgreSQL server to use instead of a throw-away one")
    parser.add_argument("--mysql-url", default=os.environ.get(MYSQL_ENV, ""),
                        help="a MariaDB server to use instead of a throw-away one")
    parser.add_argument("--stats-out", help=argparse.SUPPRESS)   # a job's counts, as JSON
    args = parser.parse_args()
    if args.jobs > 1:
        return side_by_side(args)
    log = open(args.log, "a", buffering=1) if args.log else None  # noqa: SIM115
    if log is not None:
        safety_machine.CONFIG["log"] = lambda line: print(f"{time.strftime('%H:%M:%S')} {line}",
                                                          file=log)
    safety_machine.CONFIG["stop_on_violation"] = False
    safety_machine.CONFIG["store"] = args.store
    if args.store != "sqlite":
        env, url, server = {"postgresql": (PG_ENV, args.pg_url, PgServer),
                            "mariadb": (MYSQL_ENV, args.mysql_url, MariaDbServer)}[args.store]
        if url:
            os.environ[env] = url
        else:
            safety_machine.CONFIG["pg_server"] = server()
    logging.basicConfig(stream=log or sys.stderr, level=logging.WARNING, force=True)
    stats = safety_machine.STATS
    stats["min_faults"] = args.min_faults
    stats["fault_kinds"] = list(safety_machine.fault_kinds())
    started = time.monotonic()
    round_ = 0
    while stats["steps"] < args.steps or short_of(stats):
        if args.max_minutes and time.monotonic() - started > 60 * args.max_minutes:
            print("time budget spent: stopping before the step or fault target",
                  file=sys.stderr)
            break
        left = args.steps - stats["steps"]
        examples = max(1, min(5, left // args.steps_per_example))
        # Each round its own generator seed: Hypothesis's first example of a round draws the
        # same numbers as every other round's first one.
        safety_machine.CONFIG["seed"] = f"{args.seed}:{round_}"
        machine = fixed_seed(args.seed + round_)(
            type("Machine", (safety_machine.SafetyMachine,), {}))
        try:
            run_state_machine_as_test(machine, settings=settings(
                max_examples=examples, stateful_step_count=args.steps_per_example,
                deadline=None, database=None, phases=[Phase.generate],
                suppress_health_check=list(HealthCheck)),
                _min_steps=args.steps_per_example // 2)
        except (Exception, Flaky) as exc:      # a harness error ends the round, not the run
            print(f"round {round_}: {type(exc).__name__}: {exc}", file=sys.stderr)
        round_ += 1
        print(f"{time.strftime('%H:%M:%S')} {stats['steps']} steps, {stats['examples']} "
              f"examples, {sum(stats['violations'].values())} violations", file=sys.stderr,
              flush=True)
        print(report(stats, time.monotonic() - started), file=sys.stderr, flush=True)
        write_stats(args.stats_out, stats, time.monotonic() - started)
    print(report(stats, time.monotonic() - started))
    write_stats(args.stats_out, stats, time.monotonic() - started)
    return 0


def write_stats(path: str | None, stats: dict, elapsed: float) -> None:
    """A job's counts so far, as JSON (replaced whole: a reader never sees half of it)."""
    if path:
        tmp = Path(f"{path}.tmp")
        tmp.write_text(json.dumps(dict(stats, seconds=elapsed)))
        tmp.replace(path)


def side_by_side(args: argparse.Namespace) -> int:
    """Run args.jobs processes of this bench, each its share of the steps from its own seed,
    and print the table of their sum."""
    started = time.monotonic()
    share = -(-args.steps // args.jobs)
    fault_share = -(-args.min_faults // args.jobs)
    outs = [Path(f"/tmp/safety-fuzz-job-{os.getpid()}-{i}.json") for i in range(args.jobs)]
    jobs = []
    for i, out in enumerate(outs):
        command = [sys.executable, __file__, "--steps", str(share), "--seed",
                   str(args.seed + 1000 * i), "--steps-per-example",
                   str(args.steps_per_example), "--max-minutes", str(args.max_minutes),
                   "--min-faults", str(fault_share),
                   "--stats-out", str(out), "--store", args.store, "--pg-url", args.pg_url,
                   "--mysql-url", args.mysql_url]
        err = None
        if args.log:
            command += ["--log", f"{args.log}.{i}"]
            err = open(f"{args.log}.{i}.err", "a")  # noqa: SIM115 - the job's own tables
        jobs.append(subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err))
        if err is not None:
            err.close()
    seen: list[float] = []
    while any(job.poll() is None for job in jobs):     # the sum so far, as it changes
        time.sleep(SUM_EVERY_S)
        stamps = [out.stat().st_mtime if out.exists() else 0.0 for out in outs]
        if stamps != seen and any(stamps):
            seen = stamps
            print(f"{time.strftime('%H:%M:%S')} so far, "
                  f"{sum(job.poll() is None for job in jobs)} of {args.jobs} jobs running",
                  file=sys.stderr)
            print(report(summed(args, outs), time.monotonic() - started), file=sys.stderr,
                  flush=True)
    codes = [job.wait() for job in jobs]
    total = summed(args, outs)
    for i, out in enumerate(outs):
        if not out.exists():
            print(f"job {i} (seed {args.seed + 1000 * i}) wrote no counts (exit {codes[i]})",
                  file=sys.stderr)
        out.unlink(missing_ok=True)
    print(f"{args.jobs} jobs side by side, seeds "
          f"{', '.join(str(args.seed + 1000 * i) for i in range(args.jobs))}")
    print(report(total, time.monotonic() - started))
    return 0 if all(code == 0 for code in codes) else 1


def summed(args: argparse.Namespace, outs: list[Path]) -> dict:
    """The jobs' counts (as they last wrote them), added up."""
    total: dict = {"steps": 0, "examples": 0, "faults": Counter(), "violations": Counter(),
                   "actions": Counter(), "first": {}, "kinds": Counter(), "samples": 0,
                   "min_faults": args.min_faults, "fault_kinds": []}
    for i, out in enumerate(outs):
        if not out.exists():
            continue
        part = json.loads(out.read_text())
        for key in ("steps", "examples", "samples"):
            total[key] += part[key]
        for key in ("faults", "violations", "actions", "kinds"):
            total[key].update(part[key])
        total["fault_kinds"] = sorted(set(total["fault_kinds"]) | set(part["fault_kinds"]))
        for name, first in part["first"].items():
            total["first"].setdefault(name, f"(seed {args.seed + 1000 * i}) {first}")
    return total


def short_of(stats: dict) -> list[str]:
    """The fault kinds injected fewer than stats['min_faults'] times."""
    return [kind for kind in stats.get("fault_kinds", [])
            if stats["faults"].get(kind, 0) < stats.get("min_faults", 0)]


def report(stats: dict, elapsed: float) -> str:
    """The table: steps, examples, faults by kind, actions by kind, violations by
    invariant, and the first violation of each kind."""
    rows: list[tuple[str, object]] = [
        ("steps", stats["steps"]), ("examples", stats["examples"]),
        ("seconds", f"{elapsed:.0f}"),
        ("seconds per step", f"{elapsed / max(1, stats['steps']):.2f}"),
        ("watcher samples", stats.get("samples", 0)),
        ("steps by kind", "")]
    rows += [(f"  {kind}", n) for kind, n in sorted(stats.get("kinds", {}).items())]
    faults = Counter({kind: 0 for kind in stats.get("fault_kinds", [])})
    faults.update(stats["faults"])
    rows += [("faults injected", sum(faults.values()))]
    rows += [(f"  {kind}", n) for kind, n in sorted(faults.items())]
    if stats.get("min_faults"):
        short = short_of(stats)
        rows += [("fault target", f"each kind at least {stats['min_faults']} times: " + (
            f"short: {', '.join(short)}" if short else "met"))]
    rows += [("actions", sum(stats["actions"].values()))]
    rows += [(f"  {kind}", n) for kind, n in sorted(stats["actions"].items())]
    rows += [("invariant violations", sum(stats["violations"].values()))]
    rows += [(f"  {name}", stats["violations"].get(name, 0)) for name in INVARIANTS]
    return "\n".join([table(rows)] + [f"first {first}" for _, first in
                                       sorted(stats["first"].items())])


if __name__ == "__main__":
    sys.exit(main())
