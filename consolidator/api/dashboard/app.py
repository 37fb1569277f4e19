"""The dashboard's Flask application: sign-in and sign-out, and the pages. make_dashboard()
builds it over the API application; mount() serves both from one WSGI callable."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from flask import Flask, abort, g, redirect, render_template, request, url_for

from consolidator.api.dashboard import views
from consolidator.api.dashboard.cookie import COOKIE, Box, Session, cookie_options
from consolidator.api.dashboard.signin import Keystone, SignInRefused, sign_in
from consolidator.api.dashboard.upstream import Upstream, Wsgi

#: Asks the API's policy whether a session may do what a rule names ("plan:approve").
May = Callable[[str, Session], bool]
PREFIX = "/dashboard"


@dataclass
class Dashboard:
    api: Wsgi
    keystone: Keystone
    may: May
    box: Box


def make_dashboard(api: Wsgi, keystone: Keystone, may: May, *,
                   key: bytes | None = None) -> Flask:
    """The dashboard over an API application (the whole one, auth_token included)."""
    app = Flask("consolidator.api.dashboard", static_url_path="/static")
    app.config["DASHBOARD"] = Dashboard(api, keystone, may, Box(key))
    app.jinja_env.autoescape = True
    app.jinja_env.filters["who"] = who
    app.add_url_rule("/login", "login", login, methods=["GET", "POST"])
    app.add_url_rule("/logout", "logout", logout, methods=["POST"])
    views.register(app, signed_in)
    app.after_request(_headers)
    return app


def who(actor: Any) -> str:
    """Who an actor document names: a Keystone user's name, else the OS user."""
    if isinstance(actor, dict):
        return str(actor.get("user_name") or actor.get("user_id") or "someone")
    return str(actor or "")


def dashboard() -> Dashboard:
    from flask import current_app

    board: Dashboard = current_app.config["DASHBOARD"]
    return board


def _secure() -> bool:
    return request.scheme == "https" or \
        request.headers.get("X-Forwarded-Proto", "").lower() == "https"


def _headers(response: Any) -> Any:
    """No page may be framed, cached or fed a script from elsewhere."""
    response.headers.setdefault(
        "Content-Security-Policy", "default-src 'self'; img-src 'self' data:; "
        "frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    if response.mimetype == "text/html":
        response.headers.setdefault("Cache-Control", "no-store")
    return response


def signed_in(view: Callable[..., Any]) -> Callable[..., Any]:
    """The view runs for a signed-in person (g.session, g.api); others go to the sign-in
    page. A POST needs its form's CSRF token."""
    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        session = dashboard().box.open(request.cookies.get(COOKIE))
        if session is None:
            if request.method == "POST" or request.path.endswith(".json"):
                abort(401)
            return redirect(url_for("login", next=request.script_root +
                                    request.full_path.rstrip("?")))
        if request.method == "POST" and not session.csrf_ok(request.form.get("csrf")):
            abort(403, "the form's CSRF token is missing or wrong: reload the page")
        g.session = session
        g.api = Upstream(dashboard().api, session.token)
        g.may = lambda rule: dashboard().may(rule, session)
        return view(*args, **kwargs)
    return wrapper


def login() -> Any:
    """GET: the form. POST: ask Keystone, set the cookie, go where the person was going."""
    board = dashboard()
    error = None
    if request.method == "POST":
        try:
            session = sign_in(board.keystone, request.form.get("username", "").strip(),
                              request.form.get("password", ""),
                              request.form.get("project", "").strip())
        except SignInRefused as exc:
            error = str(exc)
        else:
            target = request.args.get("next") or ""
            response = redirect(target if target.startswith(PREFIX + "/")
                                else url_for("hosts"))
            response.set_cookie(COOKIE, board.box.seal(session), **cookie_options(
                _secure(), max(0, int(session.expires_at - time.time()))))
            return response
    return render_template("login.html", error=error, project=board.keystone.project,
                           session=None), 401 if error else 200


def logout() -> Any:
    session = dashboard().box.open(request.cookies.get(COOKIE))
    if session is not None and not session.csrf_ok(request.form.get("csrf")):
        abort(403, "the form's CSRF token is missing or wrong: reload the page")
    response = redirect(url_for("login"))
    response.delete_cookie(COOKIE, path=PREFIX, samesite="Strict", httponly=True,
                           secure=_secure())
    return response


def mount(api: Wsgi, board: Flask) -> Wsgi:
    """One WSGI application: /dashboard/... to the dashboard, the rest to the API."""
    def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = environ.get("PATH_INFO", "")
        if path == PREFIX or path.startswith(PREFIX + "/"):
            environ = {**environ, "SCRIPT_NAME": environ.get("SCRIPT_NAME", "") + PREFIX,
                       "PATH_INFO": path[len(PREFIX):] or "/"}
            return board(environ, start_response)
        return api(environ, start_response)
    return application
