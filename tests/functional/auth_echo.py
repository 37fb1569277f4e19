"""keystonemiddleware's real auth_token wrapping a tiny WSGI app that says who auth_token
says the caller is: how the tests look at a Keystone (the fake one or the real one) from a
service's side, without the product's API."""

from __future__ import annotations

import json
from typing import Any

import webob
from keystonemiddleware import auth_token

#: The headers auth_token sets for the app it wraps, as the WSGI environ names them.
IDENTITY_KEYS = ("HTTP_X_IDENTITY_STATUS", "HTTP_X_USER_ID", "HTTP_X_USER_NAME",
                 "HTTP_X_ROLES", "HTTP_X_PROJECT_ID", "HTTP_X_PROJECT_NAME",
                 "HTTP_X_SERVICE_CATALOG")


def echo_identity(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    """The tiny app: the identity headers it was given, as JSON."""
    body = json.dumps({k: environ.get(k) for k in IDENTITY_KEYS}).encode()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [body]


def middleware(auth_url: str, username: str, password: str, project: str) -> Any:
    """auth_token configured as a service configures it ([keystone_authtoken] with
    auth_type = password and the service's own credentials), wrapping echo_identity."""
    conf = {"auth_type": "password", "auth_url": auth_url, "username": username,
            "password": password, "project_name": project, "user_domain_name": "Default",
            "project_domain_name": "Default", "www_authenticate_uri": auth_url,
            "interface": "public", "delay_auth_decision": "false"}
    return auth_token.AuthProtocol(echo_identity, conf)


def call(app: Any, token: str | None) -> webob.Response:
    """GET /v1/hosts through the app, with the token if any."""
    req = webob.Request.blank("/v1/hosts")
    if token is not None:
        req.headers["X-Auth-Token"] = token
    return req.get_response(app)
