"""[notify] webhook_url: a local receiver gets each event once, in order, signed, with the
plan id and a sequence number; a receiver that is down never fails the operation."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from consolidator.store import journal
from consolidator.store.db import make_engine
from tests.functional.drain_story import scenario
from tests.functional.served import served_cloud
from tests.functional.test_apply_cli import Operator, operator_for

pytestmark = pytest.mark.slow

SECRET = "s3cret"


class Receiver:
    """Every POST it answered 2xx, in arrival order; it answers 503 to the first `fail`."""

    def __init__(self, fail: int = 0) -> None:
        self.events: list[dict[str, Any]] = []
        self.refused = 0
        self.fail = fail
        self.lock = threading.Lock()


@contextmanager
def receiver(fail: int = 0) -> Iterator[tuple[Receiver, str]]:
    got = Receiver(fail)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            with got.lock:
                if got.refused < got.fail:
                    got.refused += 1
                    self.send_response(503)
                    self.end_headers()
                    return
                expected = "sha256=" + hmac.new(SECRET.encode(), body,
                                                hashlib.sha256).hexdigest()
                assert self.headers["X-Consolidator-Signature"] == expected
                event = json.loads(body)
                assert self.headers["X-Consolidator-Event"] == event["event"]
                got.events.append(event)
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield got, f"http://127.0.0.1:{server.server_address[1]}/hook"
    finally:
        server.shutdown()
        server.server_close()


def with_webhook(op: Operator, url: str, attempts: int = 4) -> Operator:
    op.config.write_text(op.config.read_text() + f"[notify]\nwebhook_url = {url}\n"
                         f"secret = {SECRET}\nbackoff = 0.05\nattempts = {attempts}\n")
    op.config.chmod(0o600)                   # it holds a secret: refused if others may read it
    return op


def _ok(op: Operator, *args: str) -> str:
    result = op(*args)
    assert result.code == 0, f"{args}: {result.out}{result.err}"
    return result.out


def test_a_receiver_gets_each_event_once_in_order(tmp_path: Path) -> None:
    with served_cloud(scenario(), tmp_path) as served, receiver(fail=1) as (got, url):
        op = with_webhook(operator_for(served, tmp_path), url)
        snap = _ok(op, "snapshot").strip()
        drain = json.loads(_ok(op, "hosts", "drain", "c1", "--power-off", "--format", "json"))
        _ok(op, "apply", drain["id"], "--yes")
        _ok(op, "hosts", "undrain", "c1")
        _ok(op, "rollback", snap, "--yes")
        _ok(op, "hosts", "power", "off", "c4", "--yes", "--force")
        _ok(op, "hosts", "power", "on", "c4")
        sequences = [e["sequence"] for e in got.events]
        assert sequences == sorted(set(sequences)), "each event once, in order"
        assert got.refused == 1                       # the first POST was retried
        seen = [(e["event"], e.get("host"), e.get("kind")) for e in got.events]
        assert seen[:8] == [
            ("plan.proposed", None, "drain"), ("plan.approved", None, "drain"),
            ("plan.started", None, "drain"), ("power.off", "c1", None),
            ("host.drained", "c1", None), ("plan.succeeded", None, "drain"),
            ("power.on", "c1", None), ("host.undrained", "c1", None)]
        assert all(e["plan_id"] == drain["id"] for e in got.events[:8])
        assert [e for e, _, k in seen[8:-2] if k == "rollback"] == [
            "plan.proposed", "plan.approved", "plan.started", "plan.succeeded"]
        rollback_id = got.events[8]["plan_id"]
        assert rollback_id != drain["id"] and all(e["plan_id"] == rollback_id
                                                  for e in got.events[8:-2])
        assert seen[-2:] == [("power.off", "c4", None), ("power.on", "c4", None)]
        assert got.events[-1]["plan_id"] is None
        assert got.events[3]["state"] == "succeeded"
        assert got.events[5]["migrations"] == 3 and got.events[5]["power_off"] == ["c1"]
        rows = [e for e in journal.entries(make_engine(op.db_url)) if e.action == "notify"]
        assert [r.id for r in rows] == sequences
        assert all(r.state == journal.SUCCEEDED for r in rows)
        assert "after 2 attempts" in rows[0].result


def test_a_receiver_that_is_down_never_fails_the_operation(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]              # nothing listens there once closed
    with served_cloud(scenario(), tmp_path) as served:
        op = with_webhook(operator_for(served, tmp_path), f"http://127.0.0.1:{closed}/",
                          attempts=2)
        result = op("hosts", "drain", "c2", "--yes")
        assert result.code == 0, result.out + result.err
        assert "not delivered after 2 attempts" in result.err
        assert served.state()["hosts"]["c2"]["status"] == "disabled"
        rows = [e for e in journal.entries(make_engine(op.db_url)) if e.action == "notify"]
        assert rows and all(r.state == journal.FAILED for r in rows)
