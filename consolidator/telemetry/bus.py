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

import concurrent.futures
import contextlib
import socket
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


class Bus:
    """A notification transport to one topic, each send bounded by `deadline` seconds."""

    def __init__(self, url: str, topic: str, deadline: float,
                 publisher_id: str | None = None) -> None:
        messaging = require_oslo_messaging()
        from oslo_config import cfg

        conf = cfg.ConfigOpts()
        conf(args=[], project="consolidator", default_config_files=[],
             default_config_dirs=[])
        try:
            self.transport = messaging.get_notification_transport(conf, url=url)
        except Exception as exc:  # noqa: BLE001 - oslo.messaging's own words, one line
            raise ConfigError(f"[notify] transport_url: {type(exc).__name__}: {exc}") from None
        self.messaging, self.topic, self.deadline = messaging, topic, deadline
        self.publisher_id = publisher_id or f"consolidator.{socket.gethostname()}"
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="bus")

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
        future = self._pool.submit(self.transport._send_notification, target, {}, message,
                                   version=2.0, retry=0)
        try:
            future.result(timeout=self.deadline)
        except concurrent.futures.TimeoutError:
            return False, f"deadline passed: the broker did not take it within " \
                          f"{self.deadline:g} s"
        except Exception as exc:  # noqa: BLE001 - a notification never fails the operation
            return False, f"not sent: {type(exc).__name__}: {exc}"
        return True, f"sent as {note.event_type} to {self.topic}.{note.priority}"

    def close(self) -> None:
        """Let go of the transport (a send still blocked is not waited for)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        with contextlib.suppress(Exception):   # leaving anyway
            self.transport.cleanup()
