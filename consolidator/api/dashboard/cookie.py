"""The session cookie: the Keystone token and who it is, encrypted and authenticated with
Fernet, HttpOnly and SameSite=Strict, Secure behind TLS; and the CSRF token of its forms."""

from __future__ import annotations

import hmac
import json
import secrets
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from cryptography.fernet import Fernet, InvalidToken

COOKIE = "consolidator_session"


@dataclass(frozen=True)
class Session:
    """Who is signed in, with what token, until when; the CSRF token of their forms."""

    token: str
    expires_at: float
    user_id: str
    user_name: str
    project_id: str
    project_name: str
    roles: tuple[str, ...]
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    def csrf_ok(self, given: str | None) -> bool:
        return bool(given) and hmac.compare_digest(self.csrf, str(given))


class Box:
    """Seals sessions into cookie values and opens them again."""

    def __init__(self, key: bytes | None = None) -> None:
        self.fernet = Fernet(key or Fernet.generate_key())

    def seal(self, session: Session) -> str:
        doc = {**asdict(session), "roles": list(session.roles)}
        return self.fernet.encrypt(json.dumps(doc).encode()).decode()

    def open(self, value: str | None) -> Session | None:
        """The session of a cookie value, or None when absent, forged, or expired."""
        if not value:
            return None
        try:
            doc: dict[str, Any] = json.loads(self.fernet.decrypt(value.encode()))
        except (InvalidToken, ValueError):
            return None
        session = Session(**{**doc, "roles": tuple(doc.get("roles") or ())})
        return session if session.expires_at > time.time() else None


def cookie_options(secure: bool, max_age: int | None) -> dict[str, Any]:
    """set_cookie's options: never readable by scripts, never sent cross-site."""
    return {"httponly": True, "samesite": "Strict", "secure": secure, "path": "/dashboard",
            "max_age": max_age}
