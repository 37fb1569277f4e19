"""Keystone v3 for the fake cloud: version documents, password auth, tokens and a catalog."""

from __future__ import annotations

import threading
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

from consolidator.core.model import stable_uuid
from consolidator.emulators.fake.server import HTTPError, Request, Response, Router, Service

TOKEN_LIFETIME = timedelta(hours=24)
UPDATED = "2024-04-04T00:00:00Z"
DOMAIN = {"id": "default", "name": "Default"}
ROLES = ("admin", "member", "reader")


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"


def project_id_for(name: str) -> str:
    """Keystone-style (hex, no dashes) id of a project name."""
    return stable_uuid("project", name).replace("-", "")


class Keystone:
    """One user in one project, with tokens kept in memory."""

    def __init__(self, *, username: str, password: str, project: str,
                 placement: bool) -> None:
        self.username = username
        self.password = password
        self.project = project
        self.placement = placement
        self.user_id = stable_uuid("user", username).replace("-", "")
        self.project_id = project_id_for(project)
        self._tokens: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def token_valid(self, token: str | None) -> bool:
        """Whether a token was issued here, is not revoked and has not expired."""
        if not token:
            return False
        with self._lock:
            body = self._tokens.get(token)
        return body is not None and body["token"]["expires_at"] > _stamp(
            datetime.now(timezone.utc))

    def revoke_all(self) -> None:
        """Forget every token (clients must authenticate again)."""
        with self._lock:
            self._tokens.clear()

    def register(self, router: Router) -> None:
        """Add Keystone's routes."""
        router.add_service(Service("identity", _error_body), "/identity")
        router.add("GET", "/identity", self.versions, service="identity", auth=False)
        router.add("GET", "/identity/v3", self.version, service="identity", auth=False)
        router.add("POST", "/identity/v3/auth/tokens", self.issue, service="identity",
                   auth=False)
        router.add("GET", "/identity/v3/auth/tokens", self.validate, service="identity")
        router.add("HEAD", "/identity/v3/auth/tokens", self.validate, service="identity")
        router.add("DELETE", "/identity/v3/auth/tokens", self.revoke, service="identity")

    def _version_doc(self, req: Request) -> dict[str, Any]:
        return {"id": "v3.14", "status": "stable", "updated": UPDATED,
                "links": [{"rel": "self", "href": f"{req.base_url}/identity/v3/"}],
                "media-types": [{"base": "application/json",
                                 "type": "application/vnd.openstack.identity-v3+json"}]}

    def versions(self, req: Request) -> Response:
        """GET /identity: the versions document (300 Multiple Choices, as Keystone)."""
        return Response(300, {"versions": {"values": [self._version_doc(req)]}})

    def version(self, req: Request) -> Response:
        """GET /identity/v3: the v3 version document."""
        return Response(200, {"version": self._version_doc(req)})

    def issue(self, req: Request) -> Response:
        """POST /identity/v3/auth/tokens: password auth, scoped to the project."""
        auth = (req.json() or {}).get("auth") or {}
        identity = auth.get("identity") or {}
        if "password" not in (identity.get("methods") or []):
            raise HTTPError(401, "The request you have made requires authentication.")
        user = (identity.get("password") or {}).get("user") or {}
        if (user.get("name") != self.username and user.get("id") != self.user_id) or \
                user.get("password") != self.password:
            raise HTTPError(401, "The request you have made requires authentication.")
        scope = (auth.get("scope") or {}).get("project")
        scoped = scope is not None
        if scope is not None and scope.get("name") != self.project \
                and scope.get("id") != self.project_id:
            raise HTTPError(401, f"User {self.user_id} has no access to project "
                                 f"{scope.get('name') or scope.get('id')}")
        token = uuid.uuid4().hex
        body = self._token_body(req, scoped)
        with self._lock:
            self._tokens[token] = body
        return Response(201, body, {"X-Subject-Token": token})

    def validate(self, req: Request) -> Response:
        """GET /identity/v3/auth/tokens: validate the X-Subject-Token."""
        subject = req.headers.get("X-Subject-Token")
        with self._lock:
            body = self._tokens.get(subject or "")
        if body is None:
            raise HTTPError(404, f"Could not find token: {subject}.")
        return Response(200, body, {"X-Subject-Token": subject or ""})

    def revoke(self, req: Request) -> Response:
        """DELETE /identity/v3/auth/tokens: revoke the X-Subject-Token."""
        subject = req.headers.get("X-Subject-Token") or ""
        with self._lock:
            found = self._tokens.pop(subject, None)
        if found is None:
            raise HTTPError(404, f"Could not find token: {subject}.")
        return Response(204)

    def _token_body(self, req: Request, scoped: bool) -> dict[str, Any]:
        now = datetime.now(timezone.utc)
        token: dict[str, Any] = {
            "methods": ["password"],
            "user": {"id": self.user_id, "name": self.username, "domain": DOMAIN,
                     "password_expires_at": None},
            "audit_ids": [uuid.uuid4().hex[:22]],
            "issued_at": _stamp(now), "expires_at": _stamp(now + TOKEN_LIFETIME),
        }
        if scoped:
            token.update({
                "project": {"id": self.project_id, "name": self.project, "domain": DOMAIN},
                "is_domain": False,
                "roles": [{"id": stable_uuid("role", r).replace("-", ""), "name": r}
                          for r in ROLES],
                "catalog": self._catalog(req.base_url),
            })
        return {"token": token}

    def _catalog(self, base: str) -> list[dict[str, Any]]:
        services = [("compute", "nova", f"{base}/compute/v2.1"),
                    ("identity", "keystone", f"{base}/identity")]
        if self.placement:
            services.append(("placement", "placement", f"{base}/placement"))
        return [{"id": stable_uuid("service", kind).replace("-", ""), "type": kind,
                 "name": name,
                 "endpoints": [{"id": stable_uuid("endpoint", f"{kind}:{iface}")
                                .replace("-", ""),
                                "interface": iface, "region": "RegionOne",
                                "region_id": "RegionOne", "url": url}
                               for iface in ("public", "internal", "admin")]}
                for kind, name, url in services]


def _error_body(status: int, message: str) -> dict[str, Any]:
    titles = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
              409: "Conflict", 500: "Internal Server Error", 503: "Service Unavailable"}
    return {"error": {"code": status, "message": message, "title": titles.get(status, "Error")}}
