"""Webhook notifications: one JSON document POSTed per event, signed with HMAC-SHA256 when a
secret is set, retried with backoff, the whole delivery bounded by a deadline however slowly
the receiver answers; a delivery never raises.

Headers: ``Content-Type: application/json``, ``X-Consolidator-Event`` (the event name),
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
from typing import Any
from urllib.parse import urlsplit

from consolidator.core.wording import plural

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
    """The body POSTed for an event document."""
    return json.dumps(document, sort_keys=True, default=str).encode()


def deliver(hook: Webhook, document: dict[str, Any]) -> tuple[bool, str]:
    """POST one event; (delivered, what happened). Never raises, and returns by the hook's
    deadline: a receiver that is down, slow or refusing is reported, not propagated."""
    body = encode(document)
    headers = {"Content-Type": "application/json", "User-Agent": "consolidator",
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
