"""Webhook notifications: one JSON document POSTed per event, signed with HMAC-SHA256 when a
secret is set, retried with backoff; a delivery never raises.

Headers: ``Content-Type: application/json``, ``X-Consolidator-Event`` (the event name),
``X-Consolidator-Sequence`` (the event's sequence number) and, with a secret,
``X-Consolidator-Signature: sha256=<hex HMAC-SHA256 of the body>`` (as GitHub signs its
webhooks), so that a receiver can check that the body came from consolidator unchanged.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception_type,
    stop_after_attempt,
    wait_exponential,
)

from consolidator.core.wording import plural

SIGNATURE_HEADER = "X-Consolidator-Signature"
#: HTTP statuses worth another try: the receiver is busy or failing for a moment.
RETRIED_STATUSES = {408, 425, 429, 500, 502, 503, 504}


@dataclass(frozen=True)
class Webhook:
    """Where events go, how they are signed, and how hard delivery tries."""

    url: str
    secret: str = ""
    timeout: float = 5.0
    attempts: int = 4
    backoff: float = 0.5


class _Transient(Exception):
    """A failed attempt that is worth another."""


def signature(secret: str, body: bytes) -> str:
    """The X-Consolidator-Signature value of a body: sha256=<hex HMAC>."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def encode(document: dict[str, Any]) -> bytes:
    """The body POSTed for an event document."""
    return json.dumps(document, sort_keys=True, default=str).encode()


def deliver(hook: Webhook, document: dict[str, Any]) -> tuple[bool, str]:
    """POST one event; (delivered, what happened). Never raises: a receiver that is down,
    slow or refusing is reported, not propagated."""
    body = encode(document)
    headers = {"Content-Type": "application/json", "User-Agent": "consolidator",
               "X-Consolidator-Event": str(document.get("event", "")),
               "X-Consolidator-Sequence": str(document.get("sequence", ""))}
    if hook.secret:
        headers[SIGNATURE_HEADER] = signature(hook.secret, body)
    tries = {"n": 0}

    def attempt() -> int:
        tries["n"] += 1
        request = urllib.request.Request(hook.url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=hook.timeout) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            if exc.code in RETRIED_STATUSES:
                raise _Transient(f"HTTP {exc.code}") from None
            raise
        except (urllib.error.URLError, OSError) as exc:
            raise _Transient(str(getattr(exc, "reason", exc))) from None

    retrying = Retrying(stop=stop_after_attempt(max(hook.attempts, 1)),
                        wait=wait_exponential(multiplier=hook.backoff, max=30),
                        retry=retry_if_exception_type(_Transient), reraise=False)
    try:
        status = retrying(attempt)
    except RetryError as exc:
        cause = exc.last_attempt.exception()
        return False, f"not delivered after {plural(tries['n'], 'attempt')}: {cause}"
    except urllib.error.HTTPError as exc:
        return False, f"refused with HTTP {exc.code} (not retried)"
    except Exception as exc:  # noqa: BLE001 - a notification never fails the operation
        return False, f"not delivered: {type(exc).__name__}: {exc}"
    return True, f"delivered (HTTP {status}) after {plural(tries['n'], 'attempt')}"
