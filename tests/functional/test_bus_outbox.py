"""The bus's outbox while the broker is unreachable: events wait, in order, up to [notify]
queue_size, counted by consolidator_notifications_waiting; past the bound they are dropped
and counted; a broker that accepts the connection and never answers holds no caller past
the deadline; and a burst leaves in order. (What waited while the broker was down arriving
once it is back: tests/functional/test_bus_notifications.py.)"""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest

from consolidator.app.notify_sinks import Sinks
from consolidator.app.settings import NotifySettings
from consolidator.telemetry.bus import Bus
from consolidator.telemetry.exporter import Metrics
from tests.functional.bus_consumer import Consumer, consuming
from tests.functional.rabbit import broker_url, free_port
from tests.functional.test_clouds_yaml import silent_listener
from tests.functional.waits import wait_until

pytestmark = pytest.mark.slow


def settings(url: str, *, topic: str = "versioned_notifications", queue_size: int = 1000,
             deadline: float = 2.0) -> NotifySettings:
    return NotifySettings(webhook_url="", secret="", timeout=1.0, attempts=1, backoff=0.0,
                          deadline=deadline, transport_url=url, topic=topic,
                          queue_size=queue_size)


def event(sequence: int) -> dict[str, Any]:
    return {"event": "plan.approved", "sequence": sequence, "plan_id": f"p{sequence}",
            "cloud": "c", "time": "2026-11-28T10:00:00+00:00", "kind": "consolidation",
            "status": "approved", "reason": "approved by operator", "algorithm": "firstfit",
            "migrations": 1, "power_off": ["h1"], "power_on": [], "drain": []}


class Record:
    """What the sinks settled and dropped."""

    def __init__(self) -> None:
        self.finished: list[tuple[int, bool, str]] = []
        self.dropped: list[str] = []
        self.lock = threading.Lock()

    def finish(self, entry: int, delivered: bool, detail: str) -> None:
        with self.lock:
            self.finished.append((entry, delivered, detail))

    def drop(self, reason: str) -> None:
        with self.lock:
            self.dropped.append(reason)


def test_a_stuck_broker_holds_a_send_no_longer_than_the_deadline() -> None:
    with silent_listener() as port:
        bus = Bus(f"rabbit://guest:guest@127.0.0.1:{port}/", "versioned_notifications", 1.0)
        outcome: list[tuple[bool, str]] = []
        caller = threading.Thread(target=lambda: outcome.append(bus.send(event(1))))
        caller.start()
        caller.join(timeout=120)
        assert not caller.is_alive(), "the send held its caller"
        assert outcome[0] == (False, "deadline passed: the broker did not take it within 1 s")
        bus.close()


def test_events_wait_up_to_the_bound_and_the_rest_are_dropped_and_counted() -> None:
    record = Record()
    down = f"rabbit://guest:guest@127.0.0.1:{free_port()}/"     # nothing listens there
    sinks = Sinks(settings(down, queue_size=3), record.finish, record.drop, bus_retry=0.05)
    metrics = Metrics(waiting=sinks.waiting)
    for sequence in range(1, 7):
        sinks.put(sequence, event(sequence))
    # At most three wait in the queue (and one more may be being tried): the rest found it
    # full and were dropped at once.
    wait_until(lambda: len(record.dropped) >= 2, "the events past the bound dropped")
    waiting = sinks.waiting()["bus"]
    assert waiting in (3, 4) and len(record.dropped) == 6 - waiting
    assert set(record.dropped) == {"queue_full"}
    assert f'consolidator_notifications_waiting{{receiver="bus"}} {waiting}.0' in \
        metrics.exposition().decode()
    assert len([e for e, ok, _ in record.finished if not ok]) == 6 - waiting
    assert "[notify] queue_size" in record.finished[0][2]
    assert sinks.close(0.0) == waiting
    assert record.dropped[6 - waiting:] == ["shutdown"] * waiting


def test_a_burst_leaves_in_order_each_once() -> None:
    topic = f"versioned_notifications_{uuid.uuid4().hex[:8]}"
    with broker_url() as url, consuming(url, topic) as consumer:
        record = Record()
        sinks = Sinks(settings(url, topic=topic), record.finish, record.drop)
        for sequence in range(1, 21):
            sinks.put(sequence, event(sequence))
        wait_until(lambda: len(record.finished) == 20, "every event settled")
        assert all(ok for _e, ok, _d in record.finished) and record.dropped == []
        wait_until(lambda: len(consumer.unique()) == 20, "every event received")
        assert consumer.invalid == []
        assert [r.sequence for r in consumer.unique()] == list(range(1, 21))
        assert {r.event_type for r in consumer.got} == {"consolidation.plan.approve"}
        assert sinks.close(5.0) == 0


class SlowOnThree(Consumer):
    """A consumer that takes its time over the third event, as a loaded machine may."""

    def take(self, priority: str, publisher_id: str, event_type: str,
             payload: dict[str, Any]) -> None:
        if payload.get("consolidator_object.data", {}).get("sequence") == 3:
            threading.Event().wait(1.0)
        super().take(priority, publisher_id, event_type, payload)


def test_the_consumer_keeps_arrival_order_however_slow_it_is_over_one() -> None:
    """The ordering tests rest on the consumer recording the order in which the broker
    handed it the notifications, not the order in which its handling of each ended."""
    topic = f"versioned_notifications_{uuid.uuid4().hex[:8]}"
    with broker_url() as url, consuming(url, topic, SlowOnThree()) as consumer:
        bus = Bus(url, topic, 30.0)
        try:
            for sequence in range(1, 7):
                assert bus.send(event(sequence))[0]
        finally:
            bus.close()
        wait_until(lambda: len(consumer.unique()) == 6, "every event received")
        assert consumer.sequences() == [1, 2, 3, 4, 5, 6]
