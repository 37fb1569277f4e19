"""What Nova's handlers share: error bodies, paging with next links, links, small parsers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlencode

from consolidator.emulators.fake.server import HTTPError, Request

MAX_LIMIT = 1000
T = TypeVar("T")

_ERROR_KEYS = {400: "badRequest", 401: "unauthorized", 403: "forbidden", 404: "itemNotFound",
               405: "badMethod", 406: "notAcceptable", 409: "conflictingRequest",
               413: "overLimit", 415: "badMediaType", 429: "overLimit",
               501: "notImplemented", 503: "serviceUnavailable"}


def error_body(status: int, message: str) -> dict[str, Any]:
    """Nova's error body: {"conflictingRequest": {"code": 409, "message": ...}} and so on."""
    return {_ERROR_KEYS.get(status, "computeFault"): {"code": status, "message": message}}


def iso_z(stamp: str) -> str:
    """'2026-01-01T00:00:00.123456' -> '2026-01-01T00:00:00Z' (servers' timestamp format)."""
    return stamp if stamp.endswith("Z") else stamp[:19] + "Z"


def is_true(value: str | None) -> bool:
    """Nova's reading of a boolean query parameter that is present."""
    if value is None:
        return False
    return value.strip().lower() not in ("0", "false", "f", "no", "n", "off")


def page(req: Request, items: Sequence[T], key: Callable[[T], str], path: str,
         positions: Callable[[str], int | None] | None = None) -> tuple[list[T], str | None]:
    """One page of items after ?marker, at most ?limit (max 1000), and the next href if full."""
    limit_arg = req.arg("limit")
    try:
        limit = MAX_LIMIT if limit_arg is None else int(limit_arg)
    except ValueError:
        raise HTTPError(400, f"limit param must be an integer: {limit_arg}") from None
    if limit < 0:
        raise HTTPError(400, "limit param must be positive")
    limit = min(limit, MAX_LIMIT)
    start = 0
    marker = req.arg("marker")
    if marker is not None:
        found = positions(marker) if positions else next(
            (i for i, item in enumerate(items) if key(item) == marker), None)
        if found is None:
            raise HTTPError(400, f"marker [{marker}] not found")
        start = found + 1
    chunk = list(items[start:start + limit])
    if not chunk or len(chunk) < limit:
        return chunk, None
    query = [(k, v) for k, values in req.query.items() if k != "marker" for v in values]
    query.append(("marker", key(chunk[-1])))
    return chunk, f"{req.base_url}{path}?{urlencode(query)}"


def links_for(req: Request, collection: str, ident: str) -> list[dict[str, str]]:
    """Nova's self and bookmark links of a resource."""
    base = f"{req.base_url}/compute"
    return [{"rel": "self", "href": f"{base}/v2.1/{collection}/{ident}"},
            {"rel": "bookmark", "href": f"{base}/{collection}/{ident}"}]


def host_ip(index: int) -> str:
    """The management IP of the host at this index."""
    n = index + 11
    return f"192.168.{(n >> 8) & 255}.{n & 255}"
