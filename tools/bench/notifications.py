"""Versioned notifications on a real RabbitMQ during a large apply (issue 48): the events
counted (journaled), sent (their journal rows settled delivered) and received (by an
oslo.messaging listener, each payload valid against its schema, in sequence), and the apply's
time (from its start to its process's exit), three times: with notifications off (no
[notify] transport_url), on with the broker up throughout, and on with the broker stopped for
--outage seconds in the middle of the apply; then the relative change of the apply's time.
The 1-minute load average before and after each apply is in the table: on a machine that is
not quiet, a change within the load's noise says nothing.

    python tools/bench/notifications.py [--migrations 200] [--outage 30] [--keep-dir]

It starts a throw-away broker from Debian's rabbitmq-server (as root; or
CONSOLIDATOR_TEST_RABBIT_URL for the run without the outage only) and serves the fake cloud
with --migrations instances to move (2 per emptied host, firstfit packing them 16 a host).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from consolidator.store import journal  # noqa: E402
from consolidator.store.db import make_engine  # noqa: E402
from tests.functional.bus_consumer import consuming  # noqa: E402
from tests.functional.rabbit import Broker  # noqa: E402
from tests.functional.served import served_cloud  # noqa: E402
from tests.functional.test_apply_cli import operator_for  # noqa: E402
from tests.functional.waits import wait_until  # noqa: E402


def scenario(migrations: int) -> dict:
    """Hosts of 32 cores with 2 instances of 2 cores each: firstfit keeps one host in 8 and
    empties the others, so about `migrations` moves."""
    hosts = max(8, round(migrations / 2 * 8 / 7))
    return {"hosts": [{"name": f"c{n:03d}", "vcpus": 32, "memory_mb": 262144, "disk_gb": 4000,
                       "bmc": {"driver": "redfish"}} for n in range(1, hosts + 1)],
            "instances": [{"name": f"vm-{h:03d}-{k}", "host": f"c{h:03d}", "vcpus": 2,
                           "memory_mb": 1024, "disk_gb": 20}
                          for h in range(1, hosts + 1) for k in range(2)],
            "settings": {"migration_bandwidth_mb_s": 2000.0, "service_up_delay_s": 0.2,
                         "bmc_graceful_delay_s": 0.1}}


def one_run(node: Broker | None, migrations: int, outage: float, work: Path) -> dict:
    """One apply, its events and its time: notifications off (node None), or on that broker,
    stopped for `outage` s (0: never) once a quarter of the migrations ended. The apply's
    time runs from its start to its process's exit (what waits in the outbox included)."""
    topic = f"versioned_notifications_{uuid.uuid4().hex[:8]}"
    work.mkdir(parents=True)
    with contextlib.ExitStack() as stack:
        consumer = stack.enter_context(consuming(node.url, topic)) if node else None
        served = stack.enter_context(served_cloud(scenario(migrations), work))
        op = operator_for(served, work)
        if node is not None:
            op.config.write_text(op.config.read_text() + f"[notify]\ntransport_url = "
                                 f"{node.url}\ntopic = {topic}\ndeadline = 60\n")
            op.config.chmod(0o600)
        assert op("snapshot").code == 0
        plan = op.plan()
        engine = make_engine(op.db_url)

        def rows() -> list[journal.Entry]:
            return [e for e in journal.entries(engine) if e.action == "notify"]
        load_before = os.getloadavg()[0]
        started = time.monotonic()
        run = op.popen("apply", plan["id"])
        ended: list[tuple[str, str, float]] = []
        waiter = threading.Thread(target=lambda: ended.append(
            (*run.communicate(), time.monotonic())), daemon=True)
        waiter.start()
        down_for = 0.0
        if outage and node is not None and consumer is not None:
            wait_until(lambda: sum(r.event_type.endswith("migration.end")
                                   for r in consumer.unique()) >= len(plan["migrations"]) // 4,
                       "a quarter of the migrations ended")
            node.stop_app()
            stopped = time.monotonic()
            time.sleep(outage)
            node.start_app()
            down_for = time.monotonic() - stopped
        waiter.join()
        out, err, finished = ended[0]
        if run.returncode != 0:
            raise SystemExit(f"apply failed: {out}{err}")
        counted = rows()
        result = {"migrations": len(plan["migrations"]), "power_off": len(plan["power_off"]),
                  "counted": len(counted), "sent": 0, "received": 0, "redelivered": 0,
                  "invalid": 0, "in_sequence": "-",
                  "apply_s": round(finished - started, 1), "broker_down_s": round(down_for, 1),
                  "load_before": round(load_before, 1),
                  "load_after": round(os.getloadavg()[0], 1)}
        if consumer is not None:
            wait_until(lambda: {r.sequence for r in consumer.unique()} >= {
                r.id for r in counted}, "every event received", timeout=300)
            got = consumer.unique()
            result.update(sent=sum(r.state == journal.SUCCEEDED for r in rows()),
                          received=len(got), redelivered=len(consumer.got) - len(got),
                          invalid=len(consumer.invalid),
                          in_sequence=[r.sequence for r in got] == [r.id for r in counted])
        return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--migrations", type=int, default=200)
    parser.add_argument("--outage", type=float, default=30.0)
    parser.add_argument("--keep-dir", action="store_true", help="keep the working directory")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="consolidator-bench-notify-"))
    node = Broker()
    node.start()
    down = f"on, broker down {args.outage:g} s"
    try:
        results = {"notifications off": one_run(None, args.migrations, 0.0, work / "off"),
                   "on, broker up": one_run(node, args.migrations, 0.0, work / "up"),
                   down: one_run(node, args.migrations, args.outage, work / "down")}
    finally:
        node.stop()
    keys = list(next(iter(results.values())))
    width = max(len(k) for k in keys)
    print(f"{'':<{width}}  " + "  ".join(f"{name:>22}" for name in results))
    for key in keys:
        print(f"{key:<{width}}  " + "  ".join(f"{str(r[key]):>22}" for r in results.values()))
    off = results["notifications off"]["apply_s"]
    up = results["on, broker up"]["apply_s"]
    print(f"{'apply_s change':<{width}}  {'':>22}  {_change(up, off):>22}  "
          f"{_change(results[down]['apply_s'], off):>22}   (against notifications off)")
    print(f"{'':<{width}}  {'':>22}  {'':>22}  {_change(results[down]['apply_s'], up):>22}"
          f"   (against the broker up)")
    print(json.dumps(results), file=sys.stderr)
    if not args.keep_dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _change(value: float, base: float) -> str:
    return f"{(value - base) / base * 100:+.1f} %"


if __name__ == "__main__":
    sys.exit(main())
