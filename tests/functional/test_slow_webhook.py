"""Issue 33, case 6: a webhook receiver that answers one byte every 2 s held 'apply' at
plan.started, and with it the executor lease (rollback and 'hosts power on' were refused) and
SIGTERM, because urlopen's timeout bounds each read, not the delivery. Events now leave from
a queue outside the lease, each delivery within [notify] deadline; a stuck receiver loses
events, and says so in the log and in consolidator_notifications_dropped_total."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from consolidator.store import journal
from consolidator.store.db import make_engine
from consolidator.store.leases import current
from consolidator.store.plans import load_plan
from consolidator.store.totals import read_all
from consolidator.telemetry.webhook import Webhook, deliver
from tests.functional.drain_story import scenario
from tests.functional.served import served_cloud
from tests.functional.test_apply_cli import operator_for


@contextmanager
def trickling_receiver() -> Iterator[tuple[str, list[int]]]:
    """An HTTP receiver on 127.0.0.1 that reads each request, then answers one byte every
    2 s, forever (a status line and a header that never end); yields its URL and the number
    of requests it got."""
    stop = threading.Event()
    got: list[int] = []
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)

    def trickle(conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            answer = b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 100_000
            for byte in answer:
                if stop.wait(2.0):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            got.append(1)
            threading.Thread(target=trickle, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/hook", got
    finally:
        stop.set()
        thread.join(timeout=10)
        server.close()


def test_one_delivery_ends_at_its_deadline_however_slowly_the_receiver_answers() -> None:
    outcome: list[tuple[bool, str]] = []
    with trickling_receiver() as (url, got):
        hook = Webhook(url, timeout=5.0, attempts=3, backoff=0.05, deadline=3.0)
        sender = threading.Thread(target=lambda: outcome.append(deliver(hook, {"event": "x"})),
                                  daemon=True)
        sender.start()
        sender.join(timeout=120)     # a guard against a hang, not a speed target
        assert not sender.is_alive(), "the delivery outlived its deadline"
    delivered, detail = outcome[0]
    assert not delivered
    assert "deadline" in detail and got


def _wait_for(what: str, check, proc: subprocess.Popen, limit: float = 240.0) -> None:  # noqa: ANN001
    """Poll until check() holds (a deadline for a loaded machine, not a speed target)."""
    end = time.monotonic() + limit
    while not check():
        assert proc.poll() is None or check(), f"the apply exited before {what}"
        assert time.monotonic() < end, f"no {what} within {limit} s"
        time.sleep(0.2)


def test_a_trickling_receiver_holds_neither_the_plan_nor_the_lease_nor_sigterm(
        tmp_path: Path) -> None:
    with served_cloud(scenario(), tmp_path) as served, trickling_receiver() as (url, got):
        op = operator_for(served, tmp_path)
        drain = op("hosts", "drain", "c1", "--power-off", "--format", "json")
        assert drain.code == 0, drain.err
        plan_id = json.loads(drain.out)["id"]
        # A deadline far beyond the test: only the queue keeps the plan and lease free.
        op.config.write_text(op.config.read_text() + f"[notify]\nwebhook_url = {url}\n"
                             f"timeout = 5\ndeadline = 3600\n")
        engine = make_engine(op.db_url)
        proc = op.popen("apply", plan_id, "--yes")
        try:
            _wait_for("the plan's end", lambda: load_plan(engine, plan_id).status not in
                      ("proposed", "approved", "running"), proc)
            assert load_plan(engine, plan_id).status == "succeeded"
            _wait_for("the executor lease's release", lambda: current(
                engine, f"executor:{load_plan(engine, plan_id).cloud}") is None, proc)
            assert proc.poll() is None, "the apply should still be sending its events"
            assert got, "the receiver got no request"
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
        assert "dropped" in err and "notification" in err, err
        assert "Traceback" not in err
        rows = [e for e in journal.entries(engine) if e.action == "notify"]
        assert rows and all(r.state == journal.FAILED for r in rows), rows
        dropped = sum(v for (name, _), v in read_all(engine).items()
                      if name == "notifications_dropped_total")
        assert dropped == len(rows)
        assert served.state()["hosts"]["c1"]["power"] == "off"
