"""The Flask application: identity from keystonemiddleware's headers, microversions, the
request id, API-SIG errors, and the routes of views_*.py."""

from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from typing import Any

from flask import Response, g, jsonify, request

from consolidator.api import conventions
from consolidator.api.errors import ApiError, shorten
from consolidator.api.policy import authorize
from consolidator.app.context import AppContext
from consolidator.app.settings import ApiSettings
from consolidator.core.actor import Actor
from consolidator.core.errors import ConsolidatorError, FourEyesError, NotFoundError, UsageError
from consolidator.core.plan import PlanStateError

LOG = logging.getLogger("consolidator.api")
#: Paths answered without a token: the version documents.
PUBLIC = {"/", "/v1", "/v1/"}


@dataclass
class Service:
    """What every request is served with: the context, the settings, the enforcer and the
    cloud the API speaks for."""

    ctx: AppContext
    settings: ApiSettings
    enforcer: Any
    cloud: str


def service() -> Service:
    """The running application's Service."""
    from flask import current_app

    return current_app.config["SERVICE"]


def context() -> AppContext:
    """This request's AppContext: the shared one, with the caller as its actor."""
    return dataclasses.replace(service().ctx, actor=g.actor, outbox=None)


def allow(rule: str) -> None:
    """Enforce one policy rule for the caller; 403 when refused."""
    authorize(service().enforcer, rule, g.credentials, {"project_id": g.project_id})


def before() -> None:
    g.request_id = request.environ.get("consolidator.request_id") or \
        conventions.new_request_id()
    g.version = conventions.MIN_VERSION
    if request.path in PUBLIC:
        return
    g.version = conventions.microversion(request.headers.get(conventions.VERSION_HEADER))
    if request.environ.get("HTTP_X_IDENTITY_STATUS") != "Confirmed":
        raise ApiError(401, "unauthorized", "Unauthorized",
                       "a valid Keystone token is needed (X-Auth-Token): none was given, or "
                       "it is expired, revoked or unknown to Keystone")
    from oslo_context.context import RequestContext

    identity = RequestContext.from_environ(request.environ)
    g.credentials = identity
    g.project_id = identity.project_id
    g.actor = Actor(kind="keystone", user_id=identity.user_id or "",
                    user_name=identity.user_name or "", project_id=identity.project_id or "",
                    project_name=identity.project_name or "",
                    roles=tuple(identity.roles or ()), request_id=g.request_id)


def after(response: Response) -> Response:
    response.headers[conventions.REQUEST_ID_HEADER] = g.get("request_id") or \
        conventions.new_request_id()
    version = g.get("version") or conventions.MIN_VERSION
    response.headers[conventions.VERSION_HEADER] = \
        f"{conventions.SERVICE_TYPE} {conventions.text(version)}"
    response.headers["Vary"] = conventions.VERSION_HEADER
    return response


def api_error(exc: ApiError) -> Response:
    request_id = g.get("request_id") or conventions.new_request_id()
    g.request_id = request_id
    response = jsonify(exc.document(request_id))
    response.status_code = exc.status
    for key, value in exc.headers.items():
        response.headers[key] = value
    if exc.status in (400, 404, 409, 412, 413, 415, 428):
        LOG.info("%s %s -> %d %s (%s)", request.method, request.path, exc.status,
                 exc.code, request_id)
    return response


def consolidator_error(exc: ConsolidatorError) -> Response:
    """The use cases' errors: unknown ids 404, four eyes 403, a state that forbids the
    change 409, any other refusal 400."""
    if isinstance(exc, NotFoundError):
        return api_error(ApiError(404, "not_found", "Not Found", shorten(str(exc), 300)))
    if isinstance(exc, FourEyesError):
        return api_error(ApiError(403, "four_eyes", "Forbidden", str(exc)))
    if isinstance(exc, PlanStateError):
        return api_error(ApiError(409, "conflict", "Conflict", str(exc)))
    if isinstance(exc, UsageError):
        return api_error(ApiError(400, "refused", "Bad Request", str(exc)))
    LOG.warning("%s %s failed (%s): %s", request.method, request.path, g.get("request_id"),
                exc)
    return api_error(ApiError(503, "unavailable", "Service Unavailable",
                               f"the store could not answer ({type(exc).__name__}); the "
                               f"API's log names request {g.get('request_id')}"))


def internal(exc: Exception) -> Response:
    original = getattr(exc, "original_exception", exc)
    LOG.error("%s %s: unexpected %s (%s)", request.method, request.path,
              type(original).__name__, g.get("request_id"))
    return api_error(ApiError(500, "internal", "Internal Server Error",
                               f"unexpected {type(original).__name__}; the API's log names "
                               f"request {g.get('request_id')}"))


def _version_doc() -> dict[str, Any]:
    base = request.host_url.rstrip("/")
    return {"id": "v1", "status": "CURRENT",
            "min_version": conventions.text(conventions.MIN_VERSION),
            "max_version": conventions.text(conventions.MAX_VERSION),
            "version": conventions.text(conventions.MAX_VERSION),
            "updated": "2026-11-28T00:00:00Z",
            "links": [{"rel": "self", "href": f"{base}/v1/"}],
            "media-types": [{"base": "application/json",
                             "type": "application/vnd.openstack.consolidation+json;"
                                     "version=1"}]}


def versions() -> Response:
    """GET /: the versions, with their microversion range; no token needed."""
    return jsonify({"versions": [_version_doc()]})


def version() -> Response:
    """GET /v1: this version's document."""
    return jsonify({"version": _version_doc()})
