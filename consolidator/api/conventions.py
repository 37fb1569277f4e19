"""OpenStack's API conventions: microversions, request ids, paging links, ETags and
ISO 8601 times."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Callable, Iterable
from datetime import datetime, timezone
from typing import Any, TypeVar
from urllib.parse import urlencode

from consolidator.api.errors import ApiError, bad_field, shorten

SERVICE_TYPE = "consolidation"
#: The microversions this API serves: (major, minor).
MIN_VERSION = (1, 0)
MAX_VERSION = (1, 0)
VERSION_HEADER = "OpenStack-API-Version"
REQUEST_ID_HEADER = "x-openstack-request-id"
T = TypeVar("T")


def text(version: tuple[int, int]) -> str:
    """1.0 from (1, 0)."""
    return f"{version[0]}.{version[1]}"


def new_request_id() -> str:
    """A request id as OpenStack writes them: req-<uuid>."""
    return f"req-{uuid.uuid4()}"


def microversion(header: str | None) -> tuple[int, int]:
    """The microversion asked (the minimum when none is): 400 when the header is malformed,
    406 naming the range when out of it."""
    if not header:
        return MIN_VERSION
    asked = None
    for part in header.split(","):
        service, _, value = part.strip().partition(" ")
        if service.lower() == SERVICE_TYPE:
            asked = value.strip()
    if asked is None:      # only other services' versions: ours defaults
        return MIN_VERSION
    if asked.lower() == "latest":
        return MAX_VERSION
    major, _, minor = asked.partition(".")
    version = (whole(major), whole(minor))
    if version[0] is None or version[1] is None:
        raise ApiError(400, "bad_version", "Bad Request",
                       f"{VERSION_HEADER}: {shorten(asked)!r} is not a version such as "
                       f"'{SERVICE_TYPE} {text(MAX_VERSION)}' or '{SERVICE_TYPE} latest'")
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise ApiError(406, "version_not_supported", "Not Acceptable",
                       f"version {shorten(asked)} is not supported: this API serves "
                       f"{SERVICE_TYPE} {text(MIN_VERSION)} to {text(MAX_VERSION)}")
    return version[0], version[1]


def whole(raw: str) -> int | None:
    """A whole number written in ASCII digits, else None; one of more than 18 digits is
    taken as 10**18, beyond every bound of this API (never converted whole)."""
    if not re.fullmatch(r"[0-9]+", raw):
        return None
    digits = raw.lstrip("0") or "0"
    return int(digits) if len(digits) <= 18 else 10 ** 18


def iso(moment: datetime | None) -> str | None:
    """An ISO 8601 UTC time ending in Z, or None."""
    if moment is None:
        return None
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def limit_of(raw: str | None, most: int) -> int:
    """The page size asked (limit=), within 1..most; the most when none is asked."""
    if raw is None:
        return most
    asked = whole(raw)
    if asked is None or asked < 1:
        raise bad_field("limit", f"{shorten(raw)!r} is not a whole number of at least 1")
    return min(asked, most)


def page(items: Iterable[T], key: Callable[[T], str], *, limit: int, marker: str | None,
         kind: str) -> tuple[list[T], bool]:
    """The items after the marker (an item's key), at most limit of them, and whether more
    follow; 400 for a marker that names no item."""
    rows = list(items)
    start = 0
    if marker is not None:
        keys = [key(r) for r in rows]
        if marker not in keys:
            raise bad_field("marker", f"no {kind} {marker!r} to continue after")
        start = keys.index(marker) + 1
    chosen = rows[start:start + limit]
    return chosen, start + limit < len(rows)


def next_links(base_url: str, query: dict[str, Any], last: str | None, more: bool
               ) -> list[dict[str, str]]:
    """The collection's links: next, with the marker of the page's last item, when more
    follow."""
    if not more or last is None:
        return []
    args = {k: v for k, v in query.items() if k != "marker" and v is not None}
    args["marker"] = last
    return [{"rel": "next", "href": f"{base_url}?{urlencode(args)}"}]


def etag(*parts: object) -> str:
    """A strong ETag over what makes a resource's state."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()[:20]
    return f'"{digest}"'


def check_if_match(header: str | None, current: str, what: str) -> None:
    """428 when a state change comes without If-Match, 412 when it names another state."""
    if header is None:
        raise ApiError(428, "etag_required", "Precondition Required",
                       f"If-Match: a change of {what} needs its ETag (GET it first), so that "
                       f"two operators cannot change it under each other")
    given = [t.strip() for t in header.split(",")]
    if "*" not in given and current not in given and f"W/{current}" not in given:
        raise ApiError(412, "etag_mismatch", "Precondition Failed",
                       f"If-Match: {what} changed since you read it (its ETag is now "
                       f"{current}): read it again and decide again")
