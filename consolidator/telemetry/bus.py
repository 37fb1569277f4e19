"""Versioned notifications on the message bus (RabbitMQ...), through oslo.messaging: the
``[notify]`` extra.

Each notification goes to ``TOPIC.PRIORITY`` (``versioned_notifications.info``) in
oslo.messaging's 2.0 envelope (message_id, publisher_id, event_type, priority, payload,
timestamp), as Notifier(driver='messagingv2') sends it. The Notifier's drivers only log a
failed send (a broker that is down would lose the event in silence), so the bus sends
through the transport as that driver does, and a failure is reported to the outbox, which
tries again. Each send is bounded by a deadline in a thread of its own, however the
transport blocks on a dead or stuck broker.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import uuid
from datetime import datetime, timezone
from typing import Any

from consolidator.core.errors import ConfigError
from consolidator.telemetry.versioned import versioned

EXTRA_HINT = "pip install 'consolidator[notify]'"


def require_oslo_messaging() -> Any:
    """The oslo_messaging module; ConfigError naming the extra when it is not installed."""
    try:
        import oslo_messaging
    except ImportError:
        raise ConfigError("[notify] transport_url needs oslo.messaging, which is not "
                          f"installed: {EXTRA_HINT}") from None
    return oslo_messaging


def check_transport_url(url: str) -> None:
    """ConfigError (one line) unless oslo.messaging is installed and knows the URL's driver;
    nothing connects."""
    messaging = require_oslo_messaging()
    transport = _transport(messaging, url)
    with contextlib.suppress(Exception):
        transport.cleanup()


def _transport(messaging: Any, url: str) -> Any:
    """A notification transport to `url` (not connected yet), on a config of its own: no
    oslo.config file of the machine is read."""
    from oslo_config import cfg

    conf = cfg.ConfigOpts()
    conf(args=[], project="consolidator", default_config_files=[], default_config_dirs=[])
    try:
        return messaging.get_notification_transport(conf, url=url)
    except Exception as exc:  # noqa: BLE001 - oslo.messaging's own words, one line
        problem = str(exc).replace(url, "the URL").splitlines()[0] if str(exc) else ""
        raise ConfigError(f"[notify] transport_url: {type(exc).__name__}"
                          f"{': ' + problem if problem else ''}") from None


class Bus:
    """A notification transport to one topic, each send bounded by `deadline` seconds."""

    def __init__(self, url: str, topic: str, deadline: float,
                 publisher_id: str | None = None) -> None:
        messaging = require_oslo_messaging()
        self.transport = _transport(messaging, url)
        self.messaging, self.topic, self.deadline = messaging, topic, deadline
        self.publisher_id = publisher_id or f"consolidator.{socket.gethostname()}"
        #: Held by the send under way: one at a time, in order, even past a deadline.
        self._sending = threading.Lock()

    def send(self, document: dict[str, Any]) -> tuple[bool, str]:
        """Send one event's versioned notification; (delivered, what happened). Never
        raises, and returns within the deadline (a send still blocked then is left to end
        in its thread; the next one waits behind it, within its own deadline)."""
        note = versioned(document)
        if note is None:
            return True, "no versioned notification for this event"
        message = {"message_id": str(uuid.uuid4()), "publisher_id": self.publisher_id,
                   "event_type": note.event_type, "priority": note.priority.upper(),
                   "payload": note.payload,
                   "timestamp": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")}
        target = self.messaging.Target(topic=f"{self.topic}.{note.priority}")
        failed: list[Exception] = []
        done = threading.Event()

        def work() -> None:     # a daemon thread: one stuck for ever never holds the exit
            with self._sending:
                try:
                    self.transport._send_notification(target, {}, message, version=2.0,
                                                      retry=0)
                except Exception as exc:  # noqa: BLE001 - reported to the outbox
                    failed.append(exc)
            done.set()
        threading.Thread(target=work, daemon=True, name="notify-bus-send").start()
        if not done.wait(self.deadline):
            return False, f"deadline passed: the broker did not take it within " \
                          f"{self.deadline:g} s"
        if failed:
            return False, f"not sent: {type(failed[0]).__name__}: {failed[0]}"
        return True, f"sent as {note.event_type} to {self.topic}.{note.priority}"

    def close(self) -> None:
        """Let go of the transport (a send still blocked is not waited for)."""
        with contextlib.suppress(Exception):   # leaving anyway
            self.transport.cleanup()
