"""The WSGI application: the Flask app behind keystonemiddleware's auth_token, inside a
wrapper that gives every response an x-openstack-request-id and every error an API-SIG
body. make_application() is what a production WSGI server calls."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from typing import Any

from consolidator.api import conventions
from consolidator.api.errors import body_for
from consolidator.api.policy import make_conf, make_enforcer
from consolidator.api.routes import make_flask
from consolidator.api.service import Service
from consolidator.app.context import AppContext
from consolidator.app.keystone_auth import token_validation_conf
from consolidator.app.settings import api_settings

LOG = logging.getLogger("consolidator.api")
Wsgi = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def make_app(ctx: AppContext, *, service_auth: dict[str, Any] | None = None) -> Wsgi:
    """The API, with its dashboard under /dashboard, for a context: its config's [api] and
    [oslo_policy], its cloud's Keystone (service_auth: the auth_token credentials, when not
    from clouds.yaml)."""
    from keystonemiddleware import auth_token

    # auth_token warns of the auth plugin's options it passes on, and at INFO logs
    # Keystone's answer, which can echo the token: neither reaches the log
    logging.getLogger("keystonemiddleware._common.config").setLevel(logging.ERROR)
    logging.getLogger("consolidator.api.auth_token").setLevel(logging.WARNING)
    # keystoneauth logs every response body at DEBUG, and Keystone's 404 for a token names
    # the token ("Could not find token: ..."): never below INFO in the API's process
    logging.getLogger("keystoneauth.session").setLevel(logging.INFO)
    settings = api_settings(ctx.config)
    conf = make_conf(policy_file=settings.policy_file, enforce_scope=settings.enforce_scope,
                     enforce_new_defaults=settings.enforce_new_defaults)
    enforcer = make_enforcer(conf)
    cloud = ctx.cloud_name
    if not cloud:
        from consolidator.core.errors import UsageError

        raise UsageError("the API needs the cloud it speaks for: give --cloud NAME or set "
                         "[cloud] name")
    ctx.engine()    # the schema must be current before the first request
    flask_app = make_flask(Service(ctx=ctx, settings=settings, enforcer=enforcer, cloud=cloud))
    middleware_conf = {**token_validation_conf(ctx, settings, service_auth),
                       "delay_auth_decision": True,
                       "oslo_config_config": conf}
    api = RequestIds(auth_token.AuthProtocol(flask_app.wsgi_app, middleware_conf))
    from consolidator.api.dashboard.serve import with_dashboard

    return with_dashboard(ctx, api, enforcer, service_auth)     # under /dashboard


class RequestIds:
    """The outermost layer: a request id in the environment and on every response, and an
    API-SIG body on an error a lower layer answered in another form."""

    def __init__(self, app: Wsgi) -> None:
        self.app = app

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]
                 ) -> Iterable[bytes]:
        request_id = conventions.new_request_id()
        environ["consolidator.request_id"] = request_id
        captured: dict[str, Any] = {}

        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
            captured["status"], captured["headers"] = status, headers
            return None

        body = b"".join(self.app(environ, start))
        status, headers = captured["status"], list(captured["headers"])
        names = {k.lower() for k, _ in headers}
        code = int(status.split()[0])
        kind = next((v for k, v in headers if k.lower() == "content-type"), "")
        if code >= 400 and "json" not in kind:
            detail = ("a valid Keystone token is needed (X-Auth-Token)" if code == 401 else
                      "Keystone could not validate the token" if code == 503 else
                      status.split(" ", 1)[-1])
            body = body_for(code, request_id, detail)
            headers = [(k, v) for k, v in headers
                       if k.lower() not in ("content-type", "content-length")]
            headers.append(("Content-Type", "application/json"))
        if conventions.REQUEST_ID_HEADER not in names:
            headers.append((conventions.REQUEST_ID_HEADER, request_id))
        headers = [(k, v) for k, v in headers if k.lower() != "content-length"]
        headers.append(("Content-Length", str(len(body))))
        start_response(status, headers)
        return [body]


def make_application() -> Wsgi:
    """The application for a WSGI server (waitress-serve --call, gunicorn, mod_wsgi): its
    config from $CONSOLIDATOR_CONFIG (default /etc/consolidator/consolidator.conf), its
    cloud from [cloud] name or $OS_CLOUD."""
    path = os.environ.get("CONSOLIDATOR_CONFIG")
    return make_app(AppContext(config_file=path, db_url=os.environ.get("CONSOLIDATOR_DB_URL")))
