"""A consumer of consolidator's versioned notifications: an oslo.messaging notification
listener on a topic, which keeps every notification in the order the broker delivered it,
and checks each payload against its shipped JSON Schema (the same consumer serves the
benchmark)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import oslo_messaging
from jsonschema import Draft202012Validator
from oslo_config import cfg

from consolidator.telemetry.versioned import EVENTS, schema

#: Each payload object's validator.
VALIDATORS = {p.name: Draft202012Validator(
    schema(p.name), format_checker=Draft202012Validator.FORMAT_CHECKER)
    for _t, p, _r in EVENTS.values()}
EVENT_TYPES = {t for t, _p, _r in EVENTS.values()}


@dataclass
class Received:
    """One notification as the consumer got it."""

    event_type: str
    priority: str
    publisher_id: str
    payload: dict[str, Any]

    @property
    def data(self) -> dict[str, Any]:
        return dict(self.payload["consolidator_object.data"])

    @property
    def sequence(self) -> int:
        return int(self.data["sequence"])


@dataclass
class Consumer:
    """What the listener got, and what did not validate."""

    got: list[Received] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, priority: str, publisher_id: str, event_type: str,
             payload: dict[str, Any]) -> None:
        problems = []
        if event_type not in EVENT_TYPES:
            problems.append(f"unknown event type {event_type}")
        name = payload.get("consolidator_object.name") if isinstance(payload, dict) else None
        validator = VALIDATORS.get(str(name))
        if validator is None:
            problems.append(f"{event_type}: unknown payload {name!r}")
        else:
            problems += [f"{event_type}: {e.message}" for e in validator.iter_errors(payload)]
        with self.lock:
            self.invalid += problems
            if not problems:
                self.got.append(Received(event_type, priority, publisher_id, payload))

    def sequences(self) -> list[int]:
        with self.lock:
            return [r.sequence for r in self.got]

    def unique(self) -> list[Received]:
        """Each event once (a redelivery after a lost confirm repeats one), first seen first."""
        seen: set[int] = set()
        out = []
        with self.lock:
            for received in self.got:
                if received.sequence not in seen:
                    seen.add(received.sequence)
                    out.append(received)
        return out


class _Endpoint:
    def __init__(self, consumer: Consumer) -> None:
        self.consumer = consumer

    def info(self, ctxt: Any, publisher_id: str, event_type: str, payload: Any,
             metadata: Any) -> None:
        self.consumer.take("INFO", publisher_id, event_type, payload)

    def error(self, ctxt: Any, publisher_id: str, event_type: str, payload: Any,
              metadata: Any) -> None:
        self.consumer.take("ERROR", publisher_id, event_type, payload)


@contextmanager
def consuming(url: str, topic: str, consumer: Consumer | None = None) -> Iterator[Consumer]:
    """A notification listener on `topic` (TOPIC.info and TOPIC.error) until the block ends,
    into `consumer` (a new one by default)."""
    conf = cfg.ConfigOpts()
    conf(args=[], project="consolidator-test", default_config_files=[], default_config_dirs=[])
    transport = oslo_messaging.get_notification_transport(conf, url=url)
    consumer = consumer if consumer is not None else Consumer()
    listener = oslo_messaging.get_notification_listener(
        transport, [oslo_messaging.Target(topic=topic)], [_Endpoint(consumer)],
        executor="threading")
    # One worker: the threading executor's pool hands each message to a thread of its own,
    # and a thread that ran late would record its message after the next one.
    listener.start(override_pool_size=1)
    try:
        yield consumer
    finally:
        listener.stop()
        listener.wait()
        transport.cleanup()
