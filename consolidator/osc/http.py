"""The consolidation API over a keystoneauth1 session: microversion header, API-SIG errors
turned into one-line messages, next links followed, ETags carried to plan state changes."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

from osc_lib import exceptions

from consolidator.osc.errors import refusal

MICROVERSION_HEADER = "OpenStack-API-Version"
#: A job is done in one of these states (expired: no daemon took it in time).
JOB_DONE = frozenset({"succeeded", "failed", "expired"})


def _root(endpoint: str) -> str:
    """The API's root URL, whether the catalog lists the root or the /v1 URL."""
    endpoint = endpoint.rstrip("/")
    return endpoint[: -len("/v1")] if endpoint.endswith("/v1") else endpoint


class ConsolidationClient:
    """Calls /v1/... on the consolidation endpoint with the session's token."""

    def __init__(self, session: Any, endpoint: str, microversion: str | None) -> None:
        self.session = session
        self.root = _root(endpoint)
        self.microversion = microversion

    def request(self, method: str, path: str, *, what: str, body: Any = None,
                params: dict[str, Any] | None = None,
                headers: dict[str, str] | None = None) -> Any:
        """One call; raises a CommandError (or Forbidden, NotFound) with one line on a 4xx/5xx.
        `what` names the action for that line ("plan approve")."""
        sent = dict(headers or {})
        sent.setdefault("Accept", "application/json")
        if self.microversion:
            sent[MICROVERSION_HEADER] = f"consolidation {self.microversion}"
        url = path if path.startswith("http") else self.root + path
        clean = {k: v for k, v in (params or {}).items() if v is not None}
        resp = self.session.request(url, method, json=body, params=clean or None,
                                    headers=sent, raise_exc=False)
        if resp.status_code >= 400:
            raise refusal(what, method, urlsplit(url).path, resp)
        return resp

    def get(self, path: str, *, what: str, params: dict[str, Any] | None = None) -> Any:
        return self.request("GET", path, what=what, params=params).json()

    def post(self, path: str, *, what: str, body: Any = None,
             headers: dict[str, str] | None = None) -> Any:
        resp = self.request("POST", path, what=what, body=body if body is not None else {},
                            headers=headers)
        return resp.json() if resp.content else {}

    def listing(self, path: str, key: str, *, what: str, params: dict[str, Any]) -> list[Any]:
        """The items of a list, following its next links unless a limit was given."""
        items: list[Any] = []
        doc = self.get(path, what=what, params=params)
        while True:
            items += doc.get(key, [])
            nxt = next_link(doc, key)
            if not nxt or params.get("limit"):
                return items
            doc = self.get(nxt, what=what)

    def etag(self, path: str, *, what: str) -> str:
        """The resource's current ETag, for If-Match."""
        resp = self.request("GET", path, what=what)
        tag = resp.headers.get("ETag")
        if not tag:
            raise exceptions.CommandError(f"{what}: the API gave no ETag for {path}")
        return tag

    def wait_job(self, job_url: str, *, what: str, timeout_s: float,
                 poll_s: float = 1.0) -> dict[str, Any]:
        """Poll a job until it is done; returns its last document."""
        deadline = time.monotonic() + timeout_s
        while True:
            job = unwrap(self.get(job_url, what=what), "job")
            if str(job.get("state")) in JOB_DONE:
                return job
            if time.monotonic() > deadline:
                raise exceptions.CommandError(
                    f"{what}: job {job.get('id')} still {job.get('state')} after "
                    f"{timeout_s:g} s; follow it with 'openstack consolidation job show "
                    f"{job.get('id')}'")
            time.sleep(poll_s)


def unwrap(doc: Any, key: str) -> Any:
    """`{"plan": {...}}` -> `{...}`; a bare document is returned as it is."""
    if isinstance(doc, dict) and isinstance(doc.get(key), dict):
        return doc[key]
    return doc


def next_link(doc: dict[str, Any], key: str) -> str | None:
    """The `next` link of a list document (`<key>_links`, `links` or a `next` field)."""
    for links in (doc.get(f"{key}_links"), doc.get("links")):
        for link in links or ():
            if isinstance(link, dict) and link.get("rel") == "next":
                return str(link["href"])
    nxt = doc.get("next")
    return str(nxt) if isinstance(nxt, str) and nxt else None
