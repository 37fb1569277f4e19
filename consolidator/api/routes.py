"""The Flask application: the hooks and error handlers of service.py and the routes of
views_*.py."""

from __future__ import annotations

from flask import Flask, request

from consolidator.api import views_hosts, views_plans, views_records
from consolidator.api.errors import ApiError
from consolidator.api.service import (
    Service,
    after,
    api_error,
    before,
    consolidator_error,
    internal,
    version,
    versions,
)
from consolidator.core.errors import ConsolidatorError


def make_flask(svc: Service) -> Flask:
    """The Flask application with its hooks, error handlers and routes."""
    app = Flask("consolidator.api")
    app.config["SERVICE"] = svc
    app.config["MAX_CONTENT_LENGTH"] = None   # bodies.parse says 413 itself, as API-SIG
    app.url_map.strict_slashes = False
    app.before_request(before)
    app.after_request(after)
    app.register_error_handler(ApiError, api_error)
    app.register_error_handler(ConsolidatorError, consolidator_error)
    app.register_error_handler(404, lambda _e: api_error(ApiError(
        404, "no_such_path", "Not Found", f"{request.path}: no such resource (see GET /)")))
    app.register_error_handler(405, lambda _e: api_error(ApiError(
        405, "method_not_allowed", "Method Not Allowed",
        f"{request.method} {request.path}: not a method of this resource")))
    app.register_error_handler(500, internal)
    app.add_url_rule("/", "versions", versions)
    app.add_url_rule("/v1", "version", version)
    for module in (views_plans, views_hosts, views_records):
        module.register(app)
    return app
