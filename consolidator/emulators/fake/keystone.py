"""Keystone v3 for the fake cloud: version documents, password auth, tokens that expire,
token validation (what keystonemiddleware's auth_token asks), roles with Keystone's implied
roles, a few users in one project, and a catalog."""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from consolidator.core.model import stable_uuid
from consolidator.emulators.fake.server import HTTPError, Request, Response, Router, Service

#: A token's lifetime unless the cloud is told otherwise (Keystone's [token] expiration).
TOKEN_LIFETIME_S = 24 * 3600.0
UPDATED = "2024-04-04T00:00:00Z"
DOMAIN = {"id": "default", "name": "Default"}
#: Keystone's implied roles, as `keystone-manage bootstrap` creates them: admin implies
#: manager, manager implies member, member implies reader. A token lists the role assigned
#: and every role it implies.
IMPLIED_ROLES: dict[str, tuple[str, ...]] = {
    "admin": ("admin", "manager", "member", "reader"),
    "manager": ("manager", "member", "reader"),
    "member": ("member", "reader"),
    "reader": ("reader",),
    "service": ("service",),
}
#: Roles that may validate anyone's token (Keystone's identity:validate_token allows the
#: admin and the service role, and any user their own token).
VALIDATORS = frozenset({"admin", "service"})
UNAUTHENTICATED = "The request you have made requires authentication."


@dataclass(frozen=True)
class User:
    """A Keystone user with one role assigned on the cloud's project."""

    name: str
    password: str
    role: str

    @property
    def id(self) -> str:
        """Keystone-style (hex, no dashes) id of the user name."""
        return stable_uuid("user", self.name).replace("-", "")

    @property
    def roles(self) -> tuple[str, ...]:
        """The role assigned and every role it implies."""
        return IMPLIED_ROLES[self.role]


#: The operations team's personas, beside the cloud's own admin user: clouds.yaml entries
#: NAME-reader, NAME-operator and NAME-admin log in as these.
PERSONAS: dict[str, User] = {
    "reader": User("reader", "reader-secret", "reader"),
    "operator": User("operator", "operator-secret", "member"),
    "admin": User("cloud-admin", "cloud-admin-secret", "admin"),
}


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%f") + "Z"


def project_id_for(name: str) -> str:
    """Keystone-style (hex, no dashes) id of a project name."""
    return stable_uuid("project", name).replace("-", "")


def role_id(name: str) -> str:
    """Keystone-style id of a role name."""
    return stable_uuid("role", name).replace("-", "")


@dataclass
class _Token:
    body: dict[str, Any]
    user: User
    expires: datetime
    scoped: bool

    @property
    def roles(self) -> frozenset[str]:
        """The roles the token carries (none unless scoped to the project)."""
        return frozenset(self.user.roles if self.scoped else ())

    def expired(self, now: datetime) -> bool:
        return now >= self.expires


class Keystone:
    """The cloud's admin user and the personas in one project, tokens kept in memory."""

    def __init__(self, *, username: str, password: str, project: str,
                 placement: bool, token_lifetime_s: float = TOKEN_LIFETIME_S) -> None:
        self.username = username
        self.password = password
        self.project = project
        self.placement = placement
        self.token_lifetime = timedelta(seconds=token_lifetime_s)
        self.admin = User(username, password, "admin")
        self.users = {u.name: u for u in (self.admin, *PERSONAS.values())}
        self.user_id = self.admin.id
        self.project_id = project_id_for(project)
        self._tokens: dict[str, _Token] = {}
        self._services: list[tuple[str, str, str]] = []
        self._lock = threading.Lock()

    def _live(self, token: str | None, *, allow_expired: bool = False) -> _Token | None:
        """The token's record if it was issued here, is not revoked and (unless
        allow_expired) has not expired."""
        if not token:
            return None
        with self._lock:
            found = self._tokens.get(token)
        if found is None or (not allow_expired and found.expired(datetime.now(timezone.utc))):
            return None
        return found

    def token_valid(self, token: str | None) -> bool:
        """Whether a token was issued here, is not revoked and has not expired."""
        return self._live(token) is not None

    def revoke_all(self) -> None:
        """Forget every token (clients must authenticate again)."""
        with self._lock:
            self._tokens.clear()

    def add_service(self, kind: str, name: str, url: str) -> None:
        """List one more service in the catalog of the tokens issued from now on, with a
        public, an internal and an admin endpoint at url (e.g. 'consolidation')."""
        with self._lock:
            self._services = [s for s in self._services if s[0] != kind] + [(kind, name, url)]

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
        router.add("GET", "/identity/v3/roles", self.list_roles, service="identity")

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

    def _authenticate(self, identity: dict[str, Any]) -> User:
        """The user a password or token identity names (401 otherwise)."""
        methods = identity.get("methods") or []
        if "password" in methods:
            given = (identity.get("password") or {}).get("user") or {}
            for user in self.users.values():
                if (given.get("name") == user.name or given.get("id") == user.id) and \
                        given.get("password") == user.password:
                    return user
        elif "token" in methods:   # re-scoping a token the caller holds
            found = self._live((identity.get("token") or {}).get("id"))
            if found is not None:
                return found.user
        raise HTTPError(401, UNAUTHENTICATED)

    def issue(self, req: Request) -> Response:
        """POST /identity/v3/auth/tokens: password (or token) auth, scoped to the project
        or unscoped."""
        auth = (req.json() or {}).get("auth") or {}
        user = self._authenticate(auth.get("identity") or {})
        scope = auth.get("scope") or {}
        if scope and "project" not in scope:
            raise HTTPError(401, f"User {user.id} has no role assignment on the scope "
                                 f"requested (only project {self.project} is served)")
        project = scope.get("project")
        if project is not None and project.get("name") != self.project \
                and project.get("id") != self.project_id:
            raise HTTPError(401, f"User {user.id} has no access to project "
                                 f"{project.get('name') or project.get('id')}")
        token = uuid.uuid4().hex
        record = self._token(req, user, scoped=project is not None)
        with self._lock:
            self._tokens[token] = record
        return Response(201, record.body, {"X-Subject-Token": token})

    def validate(self, req: Request) -> Response:
        """GET and HEAD /identity/v3/auth/tokens: validate the X-Subject-Token. 404 for a
        token unknown, revoked or expired (unless ?allow_expired=1), as Keystone; 403 when
        the caller may not see it; ?nocatalog leaves the catalog out."""
        caller = self._live(req.headers.get("X-Auth-Token"))
        subject = req.headers.get("X-Subject-Token") or ""
        found = self._live(subject, allow_expired=req.arg("allow_expired") in ("1", "true"))
        if caller is not None and found is not None and caller.user != found.user \
                and not VALIDATORS & caller.roles:
            raise HTTPError(403, "You are not authorized to perform the requested action: "
                                 "identity:validate_token.")
        if found is None:
            raise HTTPError(404, f"Could not find token: {subject}.")
        body = {"token": dict(found.body["token"])}
        if req.flag("nocatalog"):
            body["token"].pop("catalog", None)
        return Response(200, body, {"X-Subject-Token": subject})

    def revoke(self, req: Request) -> Response:
        """DELETE /identity/v3/auth/tokens: revoke the X-Subject-Token."""
        subject = req.headers.get("X-Subject-Token") or ""
        with self._lock:
            found = self._tokens.pop(subject, None)
        if found is None:
            raise HTTPError(404, f"Could not find token: {subject}.")
        return Response(204)

    def list_roles(self, req: Request) -> Response:
        """GET /identity/v3/roles[?name=]: the roles bootstrap creates."""
        name = req.arg("name")
        roles = [{"id": role_id(r), "name": r, "domain_id": None, "description": None,
                  "options": {},
                  "links": {"self": f"{req.base_url}/identity/v3/roles/{role_id(r)}"}}
                 for r in IMPLIED_ROLES if name in (None, r)]
        return Response(200, {"roles": roles, "links": {
            "self": f"{req.base_url}/identity/v3/roles", "previous": None, "next": None}})

    def _token(self, req: Request, user: User, scoped: bool) -> _Token:
        now = datetime.now(timezone.utc)
        expires = now + self.token_lifetime
        token: dict[str, Any] = {
            "methods": ["password"],
            "user": {"id": user.id, "name": user.name, "domain": DOMAIN,
                     "password_expires_at": None},
            "audit_ids": [uuid.uuid4().hex[:22]],
            "issued_at": _stamp(now), "expires_at": _stamp(expires),
        }
        if scoped:
            token.update({
                "project": {"id": self.project_id, "name": self.project, "domain": DOMAIN},
                "is_domain": False,
                "roles": [{"id": role_id(r), "name": r} for r in user.roles],
                "catalog": self._catalog(req.base_url),
            })
        return _Token({"token": token}, user, expires, scoped)

    def _catalog(self, base: str) -> list[dict[str, Any]]:
        services = [("compute", "nova", f"{base}/compute/v2.1"),
                    ("identity", "keystone", f"{base}/identity")]
        if self.placement:
            services.append(("placement", "placement", f"{base}/placement"))
        with self._lock:
            services += self._services
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
