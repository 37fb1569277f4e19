"""The API, called in process: each call goes through the whole API application (token
validation, policy, microversions, API-SIG errors) with the signed-in person's token."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from werkzeug.test import EnvironBuilder, run_wsgi_app

Wsgi = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]
#: The most pages of a list the dashboard follows.
MOST_PAGES = 1000


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    doc: Any

    @property
    def detail(self) -> str:
        """The API-SIG error's detail, or the status."""
        errors = self.doc.get("errors") if isinstance(self.doc, dict) else None
        if errors and isinstance(errors[0], dict):
            return str(errors[0].get("detail") or errors[0].get("title"))
        return f"HTTP {self.status}"


class ApiError(Exception):
    """A refusal of the API, with its status and detail."""

    def __init__(self, answer: Answer) -> None:
        super().__init__(answer.detail)
        self.answer = answer


class Upstream:
    """The API application and the token to call it with."""

    def __init__(self, api: Wsgi, token: str, request_id: str | None = None) -> None:
        self.api, self.token, self.request_id = api, token, request_id

    def call(self, method: str, path: str, *, body: Any = None,
             headers: dict[str, str] | None = None, query: dict[str, Any] | None = None
             ) -> Answer:
        sent = {"X-Auth-Token": self.token, "Accept": "application/json", **(headers or {})}
        builder = EnvironBuilder(path=path, method=method, headers=list(sent.items()),
                                 query_string={k: v for k, v in (query or {}).items() if v},
                                 data=None if body is None else json.dumps(body),
                                 content_type=None if body is None else "application/json")
        try:
            app_iter, status, got = run_wsgi_app(self.api, builder.get_environ())
            raw = b"".join(app_iter)
        finally:
            builder.close()
        code = int(status.split()[0])
        try:
            doc = json.loads(raw) if raw else None
        except ValueError:
            doc = None
        return Answer(code, dict(got.items()), doc)

    def get(self, path: str, **query: Any) -> Answer:
        answer = self.call("GET", path, query=query)
        if answer.status >= 400:
            raise ApiError(answer)
        return answer

    def every(self, path: str, key: str, **query: Any) -> list[dict[str, Any]]:
        """Every item of a list, following its next links."""
        items: list[dict[str, Any]] = []
        marker = None
        for _ in range(MOST_PAGES):
            doc = self.get(path, **query, marker=marker).doc
            page = doc.get(key, [])
            items += page
            nexts = [link for link in doc.get(f"{key}_links", []) if link.get("rel") == "next"]
            if not nexts or not page:
                break
            marker = _marker(nexts[0]["href"])
        return items


def _marker(href: str) -> str | None:
    from urllib.parse import parse_qs, urlsplit

    found = parse_qs(urlsplit(href).query).get("marker")
    return found[0] if found else None
