"""[notify] webhook_url: a local receiver gets each event once, in order, signed, as a
CloudEvents 1.0 structured-mode event whose data is the versioned payload (valid against its
shipped schema), with the sequence number as an extension attribute; the legacy format
stays behind [notify] webhook_format; a receiver that is down never fails the operation."""

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
from jsonschema import validate

from consolidator.store import journal
from consolidator.store.db import make_engine
from consolidator.telemetry.versioned import schema
from tests.functional.drain_story import scenario
from tests.functional.served import served_cloud
from tests.functional.test_apply_cli import Operator, operator_for

pytestmark = pytest.mark.slow

SECRET = "s3cret"


class Receiver:
    """Every POST it answered 2xx, in arrival order (the body as JSON, and its content type);
    it answers 503 to the first `fail`."""

    def __init__(self, fail: int = 0) -> None:
        self.events: list[dict[str, Any]] = []
        self.types: list[str] = []
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
                assert self.headers["X-Consolidator-Sequence"] == str(
                    event["sequence"])
                got.events.append(event)
                got.types.append(self.headers["Content-Type"])
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


def with_webhook(op: Operator, url: str, attempts: int = 4, webhook_format: str = "") -> Operator:
    op.config.write_text(op.config.read_text() + f"[notify]\nwebhook_url = {url}\n"
                         f"secret = {SECRET}\nbackoff = 0.05\nattempts = {attempts}\n"
                         + (f"webhook_format = {webhook_format}\n" if webhook_format else ""))
    op.config.chmod(0o600)                   # it holds a secret: refused if others may read it
    return op


def _ok(op: Operator, *args: str) -> str:
    result = op(*args)
    assert result.code == 0, f"{args}: {result.out}{result.err}"
    return result.out


def _subject(event: dict[str, Any]) -> str | None:
    data = event["data"]["consolidator_object.data"]
    return data.get("host") or data.get("instance_name")


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
        assert set(got.types) == {"application/cloudevents+json"}
        assert {e["specversion"] for e in got.events} == {"1.0"}
        sequences = [e["sequence"] for e in got.events]
        assert sequences == sorted(set(sequences)), "each event once, in order"
        assert [e["id"] for e in got.events] == [str(n) for n in sequences]
        assert got.refused == 1                       # the first POST was retried
        for event in got.events:
            payload = event["data"]
            validate(payload, schema(payload["consolidator_object.name"]))
            assert payload["consolidator_object.data"]["sequence"] == event["sequence"]
        seen = [(e["type"].removeprefix("consolidation."), _subject(e)) for e in got.events]
        moves = {("migration.start", f"a{n}") for n in range(3)} | {
            ("migration.end", f"a{n}") for n in range(3)}
        assert seen[:3] == [("plan.create", None), ("plan.approve", None),
                            ("plan.apply.start", None)]
        assert set(seen[3:9]) == moves
        assert seen[9:14] == [("host.power_off", "c1"), ("host.drain", "c1"),
                              ("plan.apply.end", None), ("host.power_on", "c1"),
                              ("host.undrain", "c1")]
        plans = [e["data"]["consolidator_object.data"].get("plan_id") for e in got.events]
        assert set(plans[:14]) == {drain["id"]}
        rollback = [t for t, _ in seen[14:-2] if t.startswith("plan.")]
        assert rollback == ["plan.create", "plan.approve", "plan.apply.start", "plan.apply.end"]
        assert plans[14] != drain["id"] and set(plans[14:-2]) == {plans[14]}
        assert seen[-2:] == [("host.power_off", "c4"), ("host.power_on", "c4")]
        assert plans[-1] is None and got.events[-1]["subject"] == "c4"
        ended = got.events[11]["data"]["consolidator_object.data"]
        assert ended["migrations"] == 3 and ended["power_off"] == ["c1"]
        assert ended["kind"] == "drain" and ended["status"] == "succeeded"
        rows = [e for e in journal.entries(make_engine(op.db_url)) if e.action == "notify"]
        assert [r.id for r in rows] == sequences
        assert all(r.state == journal.SUCCEEDED for r in rows)
        assert "after 2 attempts" in rows[0].result


def test_the_legacy_format_stays_behind_a_setting(tmp_path: Path) -> None:
    with served_cloud(scenario(), tmp_path) as served, receiver() as (got, url):
        op = with_webhook(operator_for(served, tmp_path), url, webhook_format="legacy")
        _ok(op, "hosts", "drain", "c2", "--yes")
        assert set(got.types) == {"application/json"}
        names = [e["event"] for e in got.events]
        assert names[:3] == ["plan.proposed", "plan.approved", "plan.started"]
        assert names[-2:] == ["host.drained", "plan.succeeded"]
        assert "migration.started" in names and "specversion" not in got.events[0]
        assert all(e["plan_id"] == got.events[0]["plan_id"] for e in got.events)


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
