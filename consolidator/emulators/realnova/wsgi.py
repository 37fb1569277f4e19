"""Serving WSGI apps on 127.0.0.1 with eventlet (Nova's test package monkey-patched us)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs

import eventlet
import eventlet.wsgi

from consolidator.emulators.fake.server import App, Request, Response, encode

LOG = logging.getLogger(__name__)
WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _Log:
    """eventlet.wsgi's access log, into the server's log file."""

    def __init__(self, port: int) -> None:
        self.port = port

    def write(self, message: str) -> None:
        """One access-log line."""
        LOG.debug("http %s %s", self.port, message.rstrip())


class Listener:
    """One WSGI app served on 127.0.0.1 by an eventlet green thread."""

    def __init__(self, app: WsgiApp, port: int = 0) -> None:
        self.socket = eventlet.listen(("127.0.0.1", port))
        self.port = int(self.socket.getsockname()[1])
        self._thread = eventlet.spawn(eventlet.wsgi.server, self.socket, app,
                                      log=_Log(self.port), debug=False)

    @property
    def url(self) -> str:
        """http://127.0.0.1:PORT."""
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        """Stop serving."""
        self._thread.kill()
        self.socket.close()


def nova_identity(app: WsgiApp, project_id: str) -> WsgiApp:
    """Fill in the headers that Nova's stubbed keystone context reads: an admin caller."""

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        environ.setdefault("HTTP_X_AUTH_USER", "admin")
        environ.setdefault("HTTP_X_AUTH_PROJECT_ID", project_id)
        environ.setdefault("HTTP_X_ROLES", "reader,member,admin")
        return app(environ, start_response)

    return wrapped


def placement_identity(app: WsgiApp) -> WsgiApp:
    """Placement's noauth2 wants a token, and 'admin' is the admin: keystoneauth's
    auth_type none sends 'notused'."""

    def wrapped(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        if environ.get("HTTP_X_AUTH_TOKEN") in (None, "", "notused"):
            environ["HTTP_X_AUTH_TOKEN"] = "admin"
        return app(environ, start_response)

    return wrapped


class _Headers(dict[str, Any]):
    """Request headers, looked up case-insensitively like http.server's."""

    def get(self, key: str, default: Any = None) -> Any:
        """The header's value."""
        return super().get(key.lower(), default)


def project_app(app: App) -> WsgiApp:
    """The project's own fake-cloud App (Redfish, /_fake/ control) as a WSGI app."""

    def wsgi(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(length) if length else b""
        headers = _Headers({k[5:].replace("_", "-").lower(): v for k, v in environ.items()
                            if k.startswith("HTTP_")})
        if environ.get("CONTENT_TYPE"):
            headers["content-type"] = environ["CONTENT_TYPE"]
        host = environ.get("HTTP_HOST") or f"{environ['SERVER_NAME']}:{environ['SERVER_PORT']}"
        req = Request(method=environ["REQUEST_METHOD"], path=environ.get("PATH_INFO") or "/",
                      query=parse_qs(environ.get("QUERY_STRING") or ""), headers=headers,
                      raw_body=raw, base_url=f"http://{host}")
        try:
            resp = app(req)
        except Exception as exc:  # noqa: BLE001 - a bug in a handler becomes a 500
            LOG.exception("control request failed")
            resp = Response(500, {"error": {"code": 500, "message": repr(exc)}})
        return _send(resp, start_response)

    return wsgi


def _send(resp: Response, start_response: Callable[..., Any]) -> list[bytes]:
    headers, payload = encode(resp)
    headers["Content-Length"] = str(len(payload))
    reason = {200: "OK", 201: "Created", 202: "Accepted", 204: "No Content"}.get(
        resp.status, "Error")
    start_response(f"{resp.status} {reason}", list(headers.items()))
    return [payload]
