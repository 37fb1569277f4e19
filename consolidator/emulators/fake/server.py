"""HTTP plumbing for the fake cloud: requests, responses, a route table and the server."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from consolidator.emulators.fake.faults import Faults


class HTTPError(Exception):
    """Raised by a handler: the service's error body with this status and message."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}


@dataclass
class Request:
    """One parsed HTTP request."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: Any
    raw_body: bytes
    base_url: str
    params: dict[str, str] = field(default_factory=dict)
    microversion: tuple[int, int] = (1, 0)
    query_string: str = ""

    def flag(self, name: str) -> bool:
        """Whether the query names a parameter, with or without a value (?nocatalog)."""
        return any(part.split("=", 1)[0] == name for part in self.query_string.split("&"))

    def arg(self, name: str, default: str | None = None) -> str | None:
        """The last value of a query parameter."""
        values = self.query.get(name)
        return values[-1] if values else default

    def json(self) -> Any:
        """The JSON body (400 if it is not JSON)."""
        if not self.raw_body:
            return None
        try:
            return json.loads(self.raw_body)
        except ValueError:
            raise HTTPError(400, "Malformed request body") from None


@dataclass
class Response:
    """What a handler returns: a status, a JSON-able body (or bytes, or None) and headers."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request], Response]


@dataclass
class Service:
    """A service's conventions: its error body, and hooks around each of its handlers."""

    name: str
    error_body: Callable[[int, str], Any]
    prepare: Callable[[Request], None] | None = None
    finish: Callable[[Request, Response], None] | None = None


@dataclass
class Route:
    """One route: method, path pattern, handler, service and whether it needs a token."""

    method: str
    pattern: re.Pattern[str]
    handler: Handler
    service: str
    auth: bool


class Router:
    """The route table. Patterns use {name} for one path segment."""

    def __init__(self) -> None:
        self.routes: list[Route] = []
        self.services: dict[str, Service] = {}
        self.prefixes: list[tuple[str, str]] = []

    def add_service(self, service: Service, prefix: str) -> None:
        """Register a service and the path prefix whose unmatched requests it answers."""
        self.services[service.name] = service
        self.prefixes.append((prefix, service.name))

    def add(self, method: str, pattern: str, handler: Handler, *, service: str,
            auth: bool = True) -> None:
        """Add a route; {name} matches one segment; a trailing slash is optional."""
        regex = re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", pattern.rstrip("/") or "/")
        self.routes.append(Route(method, re.compile(f"^{regex}/?$"), handler, service, auth))

    def match(self, method: str, path: str) -> tuple[Route | None, dict[str, str], bool]:
        """The route for a request, its path parameters, and whether the path exists at all."""
        path_known = False
        for route in self.routes:
            found = route.pattern.match(path)
            if found:
                path_known = True
                if route.method == method:
                    return route, found.groupdict(), True
        return None, {}, path_known

    def service_for(self, path: str) -> Service | None:
        """The service whose prefix a path falls under."""
        for prefix, name in sorted(self.prefixes, key=lambda p: -len(p[0])):
            if path == prefix or path.startswith(prefix.rstrip("/") + "/"):
                return self.services[name]
        return None


class App:
    """Dispatch: route, faults, auth, the service hooks, the handler, error bodies."""

    def __init__(self, router: Router, faults: Faults,
                 token_valid: Callable[[str | None], bool]) -> None:
        self.router = router
        self.faults = faults
        self.token_valid = token_valid
        self.log: deque[tuple[str, str, dict[str, list[str]], int, tuple[int, int]]] = deque(
            maxlen=100_000)

    def __call__(self, req: Request) -> Response:
        """Answer one request (and log it)."""
        resp = self._answer(req)
        self.log.append((req.method, req.path, req.query, resp.status, req.microversion))
        return resp

    def _answer(self, req: Request) -> Response:
        route, params, path_known = self.router.match(req.method, req.path)
        service = (self.router.services.get(route.service) if route
                   else self.router.service_for(req.path))
        try:
            if service is None or service.name != "control":
                self._apply_faults(req)
            if service is not None and service.prepare is not None:
                service.prepare(req)
            if route is None:
                raise HTTPError(405 if path_known else 404,
                                "Method not allowed" if path_known else "Not found")
            req.params = params
            if route.auth and not self.token_valid(req.headers.get("X-Auth-Token")):
                raise HTTPError(401, "The request you have made requires authentication.",
                                {"WWW-Authenticate": f'Keystone uri="{req.base_url}/identity"'})
            resp = route.handler(req)
        except HTTPError as exc:
            body = service.error_body(exc.status, exc.message) if service else {
                "error": {"code": exc.status, "message": exc.message}}
            resp = Response(exc.status, body, dict(exc.headers))
        if service is not None and service.finish is not None:
            service.finish(req, resp)
        return resp

    def _apply_faults(self, req: Request) -> None:
        delay = self.faults.delay(req.method, req.path)
        if delay:
            time.sleep(delay)
        rule = self.faults.http_error(req.method, req.path)
        if rule is not None:
            message = rule.get("message") or f"Injected fault: HTTP {rule['status']}"
            headers = {"Retry-After": str(rule["retry_after"])} if rule.get("retry_after") else {}
            raise HTTPError(rule["status"], message, headers)


class _Handler(BaseHTTPRequestHandler):
    """Turns http.server requests into Request objects for the App."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        host = self.headers.get("Host") or "{}:{}".format(*self.server.server_address[:2])
        req = Request(method=self.command, path=url.path, query=parse_qs(url.query),
                      headers=self.headers, raw_body=raw, base_url=f"http://{host}",
                      query_string=url.query)
        try:
            resp = self.server.app(req)
        except Exception as exc:  # noqa: BLE001 - a bug in a handler becomes a 500, as in Nova
            resp = Response(500, {"computeFault": {"code": 500, "message": repr(exc)}})
        self._send(resp)

    def _send(self, resp: Response) -> None:
        headers, payload = encode(resp)
        self.send_response(resp.status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        if self.close_connection:  # the client sent Connection: close; say we close too
            self.send_header("Connection", "close")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _serve

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        """Stay quiet; the fake cloud logs nothing per request."""


class _Server(ThreadingHTTPServer):
    """A threaded HTTP server that remembers its connections so stop() can close them."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], app: App) -> None:
        self.app = app
        self.connections: set[socket.socket] = set()
        self.conn_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.conn_lock:
            self.connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.conn_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (a broken pipe, a reset) is no error worth a traceback."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            return
        super().handle_error(request, client_address)


class HTTPServer:
    """The fake cloud's listening socket and its serving thread."""

    def __init__(self, app: App, host: str = "127.0.0.1", port: int = 0) -> None:
        self._server = _Server((host, port), app)
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        """The (host, port) it listens on."""
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        """Serve in a background thread."""
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        kwargs={"poll_interval": 0.05},
                                        name="fake-cloud-http", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop serving, close every open connection and the socket."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        with self._server.conn_lock:
            for conn in list(self._server.connections):
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)
        self._server.server_close()


def encode(resp: Response) -> tuple[dict[str, str], bytes]:
    """A response's headers and body bytes: JSON for a mapping or list, with its type."""
    headers = dict(resp.headers)
    if resp.body is None:
        return headers, b""
    if isinstance(resp.body, bytes):
        return headers, resp.body
    headers.setdefault("Content-Type", "application/json")
    return headers, json.dumps(resp.body).encode()
