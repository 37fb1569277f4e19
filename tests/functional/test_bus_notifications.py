"""[notify] transport_url: versioned notifications on a real RabbitMQ (Debian's
rabbitmq-server, tests/functional/rabbit.py). An oslo.messaging notification listener gets
every event of an apply on the fake cloud, in sequence, each payload valid against its
shipped schema; and the same when the broker is stopped in the middle of the apply: the
events wait in the outbox and arrive once it is back, and the apply goes on meanwhile."""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from consolidator.core.journal_entry import Entry
from consolidator.store import journal
from consolidator.store.db import make_engine
from tests.functional.bus_consumer import Consumer, consuming
from tests.functional.rabbit import broker, broker_url
from tests.functional.served import served_cloud
from tests.functional.test_apply_cli import Operator, operator_for
from tests.functional.waits import COMMAND_TIMEOUT_S, wait_until

pytestmark = pytest.mark.slow

#: 12 hosts holding 2 instances each; firstfit packs them onto 3, so 18 live migrations and 9
#: hosts powered off.
HOSTS, PER_HOST = 12, 2


def scenario(bandwidth: float) -> dict:
    hosts = [{"name": f"c{n:02d}", "vcpus": 16, "memory_mb": 65536, "disk_gb": 1000,
              "bmc": {"driver": "redfish"}} for n in range(1, HOSTS + 1)]
    instances = [{"name": f"vm-{h:02d}-{k}", "host": f"c{h:02d}", "vcpus": 2,
                  "memory_mb": 1024, "disk_gb": 20}
                 for h in range(1, HOSTS + 1) for k in range(PER_HOST)]
    return {"hosts": hosts, "instances": instances,
            "settings": {"migration_bandwidth_mb_s": bandwidth, "service_up_delay_s": 0.2,
                         "bmc_graceful_delay_s": 0.1}}


def with_bus(op: Operator, url: str, topic: str) -> Operator:
    op.config.write_text(op.config.read_text() + f"[notify]\ntransport_url = {url}\n"
                         f"topic = {topic}\n")
    op.config.chmod(0o600)              # guest's password is in the URL
    return op


def notify_rows(op: Operator) -> list[Entry]:
    return [e for e in journal.entries(make_engine(op.db_url)) if e.action == "notify"]


def check_every_event(op: Operator, consumer: Consumer, plan: dict) -> list[str]:
    """Every journaled event arrived, valid, each in sequence; the event types in order."""
    rows = notify_rows(op)
    wait_until(lambda: set(consumer.sequences()) >= {r.id for r in rows},
               "every journaled event on the bus")
    assert consumer.invalid == []
    got = consumer.unique()
    assert [r.sequence for r in got] == [r.id for r in rows], "in sequence, none missing"
    assert all(r.state == journal.SUCCEEDED for r in notify_rows(op))
    assert {r.publisher_id for r in got} == {got[0].publisher_id}
    assert got[0].publisher_id.startswith("consolidator.")
    assert {r.priority for r in got} == {"INFO"}
    types = [r.event_type.removeprefix("consolidation.") for r in got]
    moves = len(plan["migrations"])
    assert moves == 18 and len(plan["power_off"]) == 9
    assert Counter(types) == Counter({
        "plan.create": 1, "plan.approve": 1, "plan.apply.start": 1, "migration.start": moves,
        "migration.end": moves, "host.power_off": 9, "plan.apply.end": 1})
    assert types[:3] == ["plan.create", "plan.approve", "plan.apply.start"]
    assert types[-1] == "plan.apply.end"
    assert {r.data["plan_id"] for r in got} == {plan["id"]}
    ended = {r.data["instance_id"] for r in got if r.event_type.endswith("migration.end")}
    assert ended == {m["instance_id"] for m in plan["migrations"]}
    return types


def test_a_consumer_gets_every_event_of_an_apply_in_sequence(tmp_path: Path) -> None:
    topic = f"versioned_notifications_{uuid.uuid4().hex[:8]}"
    with broker_url() as url, consuming(url, topic) as consumer, \
            served_cloud(scenario(bandwidth=1e6), tmp_path) as served:
        op = with_bus(operator_for(served, tmp_path), url, topic)
        assert op("snapshot").code == 0
        plan = op.plan()
        applied = op("apply", plan["id"])
        assert applied.code == 0, applied.out + applied.err
        check_every_event(op, consumer, plan)


def test_events_wait_while_the_broker_is_down_and_arrive_after(tmp_path: Path) -> None:
    topic = f"versioned_notifications_{uuid.uuid4().hex[:8]}"
    with broker() as node, consuming(node.url, topic) as consumer, \
            served_cloud(scenario(bandwidth=400.0), tmp_path) as served:
        op = with_bus(operator_for(served, tmp_path), node.url, topic)
        assert op("snapshot").code == 0
        plan = op.plan()
        run = op.popen("apply", plan["id"], "--max-parallel", "2")
        try:
            wait_until(lambda: any(r.event_type.endswith("migration.end")
                                   for r in consumer.unique()), "a first migration's end")
            wait_until(lambda: set(consumer.sequences()) >= {r.id for r in notify_rows(op)},
                       "the consumer has caught up", interval=0.02)
            node.stop_app()
            down_at = len(notify_rows(op))
            # The apply goes on while the broker is down: its events are journaled and wait.
            wait_until(lambda: len(notify_rows(op)) >= down_at + 4 or run.poll() is not None,
                       "events made while the broker is down")
            time.sleep(3.0)                   # the broker stays down a while longer
            waiting = [r for r in notify_rows(op) if r.state == journal.RUNNING]
            node.start_app()
            out, err = run.communicate(timeout=COMMAND_TIMEOUT_S)
        finally:
            if run.poll() is None:
                run.kill()
        assert run.returncode == 0, out + err
        assert "Traceback" not in err and "Eventlet" not in err, err   # no library's noise
        assert waiting, "events waited in the outbox while the broker was down"
        assert len(notify_rows(op)) > down_at
        check_every_event(op, consumer, plan)
        stored = json.loads(op("journal", "--plan", plan["id"], "--format", "json").out)
        assert all(r["state"] == "succeeded" for r in stored if r["action"] == "migrate")
