"""Sign-in: the server asks Keystone for a project-scoped token with a username and
password, and keeps what the token says of its holder."""

from __future__ import annotations

import time
from dataclasses import dataclass

from keystoneauth1 import exceptions as ks_exceptions
from keystoneauth1 import session as ks_session
from keystoneauth1.identity import v3

from consolidator.api.dashboard.cookie import Session


@dataclass(frozen=True)
class Keystone:
    """The Keystone the API validates tokens against, and the defaults of the form."""

    auth_url: str
    project: str
    domain: str = "Default"


class SignInRefused(Exception):
    """Keystone did not give a token: the message says why, without the password."""


def sign_in(keystone: Keystone, username: str, password: str, project: str) -> Session:
    """A session for this person, scoped to the project; SignInRefused otherwise."""
    if not username or not password:
        raise SignInRefused("give a username and a password")
    auth = v3.Password(auth_url=keystone.auth_url, username=username, password=password,
                       project_name=project or keystone.project,
                       user_domain_name=keystone.domain,
                       project_domain_name=keystone.domain)
    try:
        access = auth.get_access(ks_session.Session(auth=auth, timeout=30))
    except ks_exceptions.Unauthorized:
        raise SignInRefused("Keystone refused this username, password or project") from None
    except (ks_exceptions.ConnectFailure, ks_exceptions.DiscoveryFailure) as exc:
        raise SignInRefused(f"Keystone at {keystone.auth_url} did not answer: "
                            f"{type(exc).__name__}") from None
    expires = access.expires.timestamp() if access.expires else time.time() + 3600
    return Session(token=str(access.auth_token), expires_at=expires, user_id=access.user_id or "",
                   user_name=access.username or username, project_id=access.project_id or "",
                   project_name=access.project_name or project,
                   roles=tuple(access.role_names or ()))
