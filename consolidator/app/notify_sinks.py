"""Where the events go: the webhook (CloudEvents, or the legacy format) and the message bus
(versioned notifications through oslo.messaging), each from an outbox of its own, so that a
broker that is down holds neither the webhook nor the executor. An event's journal row is
settled once every sink has settled it: succeeded when each delivered it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from consolidator.app.outbox import Outbox
from consolidator.app.settings import NotifySettings

#: entry, delivered by every sink, what each said.
Finish = Callable[[int, bool, str], None]
#: Seconds between the tries of an event the broker did not take.
BUS_RETRY_S = 1.0


class Sinks:
    """The outboxes of the configured sinks, behind the one interface of an outbox."""

    def __init__(self, settings: NotifySettings, finish: Finish, dropped: Callable[[str], None],
                 bus_retry: float = BUS_RETRY_S) -> None:
        """finish(entry, delivered, detail): an event settled by every sink; dropped(reason):
        one sink gave an event up."""
        self._finish, self._dropped = finish, dropped
        self._lock = threading.Lock()
        #: entry -> (sinks still to settle it, delivered by all so far, what each said)
        self._open: dict[int, tuple[int, bool, list[str]]] = {}
        self.outboxes: dict[str, Outbox] = {}
        self._bus: Any = None
        if settings.webhook_url:
            from consolidator.telemetry.webhook import Webhook, deliver

            hook = Webhook(settings.webhook_url, settings.secret, settings.timeout,
                           settings.attempts, settings.backoff, settings.deadline,
                           settings.webhook_format)
            self.outboxes["webhook"] = self._outbox("webhook", lambda d: deliver(hook, d),
                                                    settings.queue_size, None)
        if settings.transport_url:
            from consolidator.telemetry.bus import Bus

            self._bus = Bus(settings.transport_url, settings.topic, settings.deadline)
            self.outboxes["bus"] = self._outbox("bus", self._bus.send, settings.queue_size,
                                                bus_retry)

    def _outbox(self, sink: str, send: Callable[[dict[str, Any]], tuple[bool, str]],
                capacity: int, retry: float | None) -> Outbox:
        def settle(entry: int, delivered: bool, detail: str, reason: str) -> None:
            self._settled(entry, sink, delivered, detail, reason)
        return Outbox(send, settle, capacity=capacity, retry=retry, name=f"notify-{sink}")

    def put(self, entry: int, document: dict[str, Any]) -> None:
        """Queue one event for every sink."""
        with self._lock:
            self._open[entry] = (len(self.outboxes), True, [])
        for outbox in self.outboxes.values():
            outbox.put(entry, document)

    def _settled(self, entry: int, sink: str, delivered: bool, detail: str,
                 reason: str) -> None:
        if not delivered:
            self._dropped(reason)
        with self._lock:
            left, ok, said = self._open.get(entry, (1, True, []))
            said = [*said, f"{sink}: {detail}" if len(self.outboxes) > 1 else detail]
            left, ok = left - 1, ok and delivered
            if left > 0:
                self._open[entry] = (left, ok, said)
                return
            self._open.pop(entry, None)
        self._finish(entry, ok, "; ".join(said))

    @property
    def pending(self) -> int:
        """Events queued or being sent, over every sink."""
        return sum(o.pending for o in self.outboxes.values())

    def waiting(self) -> dict[str, int]:
        """Events waiting, by sink."""
        return {sink: outbox.pending for sink, outbox in self.outboxes.items()}

    def close(self, wait: float) -> int:
        """Wait at most `wait` seconds for the events still queued (every sink together),
        then drop the rest; the number dropped."""
        ends = time.monotonic() + wait
        dropped = sum(outbox.close(max(ends - time.monotonic(), 0.0))
                      for outbox in self.outboxes.values())
        if self._bus is not None:
            self._bus.close()
        return dropped
