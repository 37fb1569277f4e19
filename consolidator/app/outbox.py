"""The notifications' outbox: events queued by whoever made them (a plan run holding the
executor lease, a rollback, 'hosts power'), and sent by a thread of their own, one at a time
and in order, each delivery within [notify] deadline. Nothing that acts on the cloud ever
waits for a receiver. A webhook's outbox gives up on an event once its delivery fails (a
stuck receiver loses events); the bus's outbox keeps the event and tries again every
`retry` seconds, so that the events wait, in order, while the broker is down. Either way at
most `capacity` events wait ([notify] queue_size): past it a new event is dropped at once.
A dropped event is journaled failed, logged and counted in
consolidator_notifications_dropped_total; the waiting ones are
consolidator_notifications_waiting.

When the command ends, it waits at most one deadline for the events still queued (after its
leases are released), and drops the rest; SIGTERM or SIGINT during that wait drops them at
once.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

LOG = logging.getLogger(__name__)

#: Events queued beyond this are dropped at once (a receiver that long stuck loses them).
CAPACITY = 1000

#: entry id, delivered, what happened, why it was dropped ('' when delivered).
Settle = Callable[[int, bool, str, str], None]


class Outbox:
    """Events waiting for the webhook, and the thread that sends them."""

    def __init__(self, send: Callable[[dict[str, Any]], tuple[bool, str]], settle: Settle,
                 *, capacity: int = CAPACITY, retry: float | None = None,
                 name: str = "notify") -> None:
        """retry: seconds between the tries of an event not delivered (None: one delivery,
        then it is dropped)."""
        self.send, self._settle = send, settle
        self.capacity, self.retry = capacity, retry
        self._queue: queue.Queue[tuple[int, dict[str, Any]] | None] = queue.Queue(capacity)
        self._lock = threading.Lock()
        self._open: dict[int, str] = {}          # entry -> event: queued or being sent
        self._settling: set[int] = set()         # entries whose outcome is being recorded
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._work, daemon=True, name=name)
        self._thread.start()

    def put(self, entry: int, document: dict[str, Any]) -> None:
        """Queue one event (its journal row's id is `entry`); dropped at once when full."""
        with self._lock:
            self._open[entry] = str(document.get("event", ""))
        try:
            self._queue.put_nowait((entry, document))
        except queue.Full:
            self._finish(entry, False, f"dropped: {self.capacity} events already wait for "
                                       f"the receiver ([notify] queue_size)", "queue_full")

    @property
    def pending(self) -> int:
        """Events queued or being sent."""
        with self._lock:
            return len(self._open)

    def close(self, wait: float) -> int:
        """Wait at most `wait` seconds for the queued events (SIGTERM or SIGINT ends the
        wait), then drop what is left; the number dropped."""
        with contextlib.suppress(queue.Full):   # the thread ends once the queue is empty
            self._queue.put_nowait(None)
        ends = time.monotonic() + wait
        with _interruptible() as interrupted:
            while self.pending and not interrupted.is_set():
                left = ends - time.monotonic()
                if left <= 0:
                    break
                interrupted.wait(min(left, 0.1))
        why = ("the command was signalled" if interrupted.is_set() else
               f"the receiver did not take them within [notify] deadline ({wait:g} s)")
        with self._lock:
            left_over = sorted((e, v) for e, v in self._open.items() if e not in self._settling)
        for entry, _event in left_over:
            self._finish(entry, False, f"dropped at exit: {why}", "shutdown")
        self._closed.set()
        if left_over:
            LOG.warning("%d notification(s) dropped at exit: %s", len(left_over), why)
        settled_by = time.monotonic() + 5.0      # an outcome being recorded: let it land
        while self.pending and time.monotonic() < settled_by:
            time.sleep(0.05)
        return len(left_over)

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            entry, document = item
            with self._lock:
                if entry not in self._open or entry in self._settling:   # dropped meanwhile
                    continue
            delivered, detail = self.send(document)
            while not delivered and self.retry is not None and self._open_still(entry):
                LOG.info("notification #%d not sent (%s): trying again in %g s", entry,
                         detail, self.retry)
                self._closed.wait(self.retry)
                if not self._open_still(entry):
                    break
                delivered, detail = self.send(document)
            reason = "" if delivered else (
                "deadline" if detail.startswith("deadline passed") else "failed")
            self._finish(entry, delivered, detail, reason)

    def _open_still(self, entry: int) -> bool:
        """Whether an event is still to be sent (not dropped at exit meanwhile)."""
        with self._lock:
            return entry in self._open and entry not in self._settling

    def _finish(self, entry: int, delivered: bool, detail: str, reason: str) -> None:
        """Settle an event once: the first outcome counts (a drop at exit, or the send). It
        stays pending until recorded, so that close() does not return before."""
        with self._lock:
            event = self._open.get(entry)
            if event is None or entry in self._settling:
                return
            self._settling.add(entry)
        if not delivered:
            LOG.warning("notification %s (#%d) dropped: %s", event, entry, detail)
        try:
            self._settle(entry, delivered, detail, reason)
        except Exception as exc:  # noqa: BLE001 - the database: the event is lost anyway
            LOG.warning("notification %s (#%d): could not record it: %s", event, entry, exc)
        finally:
            with self._lock:
                self._open.pop(entry, None)
                self._settling.discard(entry)


@contextmanager
def _interruptible() -> Iterator[threading.Event]:
    """An event SIGTERM and SIGINT set while the block runs (in the main thread only)."""
    interrupted = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield interrupted
        return
    previous = {}
    for sig in (signal.SIGTERM, signal.SIGINT):
        previous[sig] = signal.signal(sig, lambda _n, _f: interrupted.set())
    try:
        yield interrupted
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
