"""Errors as the API-SIG's JSON: {"errors": [{"status", "code", "title", "detail",
"request_id"}]}."""

from __future__ import annotations

import json
from typing import Any


class ApiError(Exception):
    """A refusal with its HTTP status, a stable code, and one line naming the problem (and
    the field, when a field is at fault)."""

    def __init__(self, status: int, code: str, title: str, detail: str, *,
                 field: str | None = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status, self.code, self.title, self.detail = status, code, title, detail
        self.field = field
        self.headers = headers or {}

    def document(self, request_id: str) -> dict[str, Any]:
        """The error's JSON document."""
        error: dict[str, Any] = {"status": str(self.status), "code": f"consolidation.{self.code}",
                                 "title": self.title, "detail": self.detail,
                                 "request_id": request_id}
        if self.field is not None:
            error["source"] = {"pointer": f"/{self.field.replace('.', '/')}"}
        return {"errors": [error]}


def bad_field(field: str, detail: str) -> ApiError:
    """400 naming a field of the body or the query."""
    return ApiError(400, "invalid_field", "Bad Request", f"{field}: {detail}", field=field)


def shorten(raw: str, most: int = 40) -> str:
    """A value the caller sent, cut to at most `most` characters for an error's detail."""
    return raw if len(raw) <= most else raw[:most] + "..."


def not_found(kind: str, ref: str) -> ApiError:
    """404 for an unknown id or name (an id of any length is named by its start)."""
    return ApiError(404, "not_found", "Not Found", f"no {kind} {shorten(ref, 80)!r}")


#: Titles of the statuses the outer wrapper may have to describe itself.
TITLES = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
          405: "Method Not Allowed", 406: "Not Acceptable", 409: "Conflict",
          412: "Precondition Failed", 413: "Payload Too Large", 415: "Unsupported Media Type",
          428: "Precondition Required", 500: "Internal Server Error",
          502: "Bad Gateway", 503: "Service Unavailable"}


def body_for(status: int, request_id: str, detail: str) -> bytes:
    """An API-SIG body for a status that some layer answered without one."""
    return json.dumps(ApiError(status, f"http_{status}", TITLES.get(status, "Error"),
                               detail).document(request_id)).encode()
