"""Webhook notifications: one event POSTed per event, signed with HMAC-SHA256 when a secret
is set, retried with backoff, the whole delivery bounded by a deadline however slowly the
receiver answers; a delivery never raises.

The body is a CloudEvents 1.0 event in structured mode (``Content-Type:
application/cloudevents+json``, made with the ``cloudevents`` library): ``type`` is the
versioned notification's event type (``consolidation.plan.create``...), ``id`` and the
extension attribute ``sequence`` the event's sequence number, ``subject`` the plan or host,
``priority`` info or error, and ``data`` the versioned payload (telemetry/versioned.py). The
legacy format (``webhook_format = legacy``, for one release) is the event document itself as
``application/json``.

Headers: ``X-Consolidator-Event`` (the event name),
``X-Consolidator-Sequence`` (the event's sequence number) and, with a secret,
``X-Consolidator-Signature: sha256=<hex HMAC-SHA256 of the body>`` (as GitHub signs its
webhooks), so that a receiver can check that the body came from consolidator unchanged.

A socket timeout bounds each read, not the delivery: a receiver that answers one byte every
2 s never trips it. So each attempt's socket is shut down by a timer when the delivery's
deadline passes, which ends whatever read or write is blocked on it.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import http.client
import json
import socket
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from consolidator.core.wording import plural
from consolidator.telemetry.versioned import versioned

SIGNATURE_HEADER = "X-Consolidator-Signature"
#: HTTP statuses worth another try: the receiver is busy or failing for a moment.
RETRIED_STATUSES = {408, 425, 429, 500, 502, 503, 504}


@dataclass(frozen=True)
class Webhook:
    """Where events go, how they are signed, and how hard and how long delivery tries."""

    url: str
    secret: str = ""
    timeout: float = 5.0
    attempts: int = 4
    backoff: float = 0.5
    #: Seconds the whole delivery (every attempt and wait) may take.
    deadline: float = 30.0
    #: The body: "cloudevents" or "legacy".
    format: str = "cloudevents"


class _Transient(Exception):
    """A failed attempt that is worth another."""


class _Refused(Exception):
    """The receiver answered with a status that is not worth another try."""


class _DeadlinePassed(Exception):
    """The delivery's deadline passed during an attempt."""


def signature(secret: str, body: bytes) -> str:
    """The X-Consolidator-Signature value of a body: sha256=<hex HMAC>."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def encode(document: dict[str, Any]) -> bytes:
    """The legacy body POSTed for an event document."""
    return json.dumps(document, sort_keys=True, default=str).encode()


def cloud_event(document: dict[str, Any]) -> tuple[bytes, str]:
    """The CloudEvents 1.0 structured-mode body of an event document, and its content
    type."""
    from cloudevents.core.bindings import http as ce_http
    from cloudevents.core.v1.event import CloudEvent

    note = versioned(document)
    event = str(document.get("event", ""))
    sequence = int(document.get("sequence") or 0)
    attributes: dict[str, Any] = {
        "specversion": "1.0", "id": str(sequence),
        "source": f"/consolidator/{document.get('cloud') or 'default'}",
        "type": note.event_type if note else f"consolidation.{event}",
        "datacontenttype": "application/json", "sequence": sequence,
        "priority": note.priority if note else "info"}
    subject = document.get("host") or document.get("instance_id") or document.get("plan_id")
    if subject:
        attributes["subject"] = str(subject)
    when = document.get("time")
    if when:
        attributes["time"] = datetime.fromisoformat(str(when))
    data = note.payload if note else json.loads(encode(document))
    message = ce_http.to_structured_event(CloudEvent(attributes=attributes, data=data))
    return message.body, message.headers.get("content-type", "application/cloudevents+json")


def deliver(hook: Webhook, document: dict[str, Any]) -> tuple[bool, str]:
    """POST one event; (delivered, what happened). Never raises, and returns by the hook's
    deadline: a receiver that is down, slow or refusing is reported, not propagated."""
    if hook.format == "legacy":
        body, content_type = encode(document), "application/json"
    else:
        body, content_type = cloud_event(document)
    headers = {"Content-Type": content_type, "User-Agent": "consolidator",
               "X-Consolidator-Event": str(document.get("event", "")),
               "X-Consolidator-Sequence": str(document.get("sequence", ""))}
    if hook.secret:
        headers[SIGNATURE_HEADER] = signature(hook.secret, body)
    ends = time.monotonic() + hook.deadline
    tries, cause = 0, ""
    for attempt in range(max(hook.attempts, 1)):
        if attempt:
            pause = min(hook.backoff * 2 ** (attempt - 1), 30.0)
            if time.monotonic() + pause >= ends:
                break
            time.sleep(pause)
        tries += 1
        try:
            status = _post(hook, body, headers, ends)
        except _Transient as exc:
            cause = str(exc)
            continue
        except _Refused as exc:
            return False, f"refused with HTTP {exc} (not retried)"
        except _DeadlinePassed:
            return False, (f"deadline passed: no answer within {hook.deadline:g} s "
                           f"({plural(tries, 'attempt')})")
        except Exception as exc:  # noqa: BLE001 - a notification never fails the operation
            return False, f"not delivered: {type(exc).__name__}: {exc}"
        return True, f"delivered (HTTP {status}) after {plural(tries, 'attempt')}"
    if time.monotonic() >= ends or tries < max(hook.attempts, 1):
        return False, (f"deadline passed: not delivered within {hook.deadline:g} s "
                       f"({plural(tries, 'attempt')}; the last: {cause})")
    return False, f"not delivered after {plural(tries, 'attempt')}: {cause}"


def _post(hook: Webhook, body: bytes, headers: dict[str, str], ends: float) -> int:
    """One POST, its socket shut down at the deadline; the status, else an exception."""
    left = ends - time.monotonic()
    if left <= 0:
        raise _DeadlinePassed
    parts = urlsplit(hook.url)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    conn = kind(parts.hostname or "", parts.port, timeout=min(hook.timeout, left))
    passed = threading.Event()

    def cut() -> None:
        passed.set()
        sock = conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(left, cut)
    timer.daemon = True
    timer.start()
    try:
        path = parts.path or "/"
        conn.request("POST", f"{path}?{parts.query}" if parts.query else path, body, headers)
        response = conn.getresponse()
        response.read()
        status = int(response.status)
    except (OSError, http.client.HTTPException) as exc:
        if passed.is_set():
            raise _DeadlinePassed from None
        raise _Transient(str(exc) or type(exc).__name__) from None
    finally:
        timer.cancel()
        conn.close()
    if passed.is_set():
        raise _DeadlinePassed
    if status in RETRIED_STATUSES:
        raise _Transient(f"HTTP {status}")
    if status >= 400:
        raise _Refused(str(status))
    return status
