"""The API served by waitress in a thread of another process (fake-cloud serve --with-api,
tests): its URL and what stops it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def serve_in_thread(application: Any, host: str = "127.0.0.1", port: int = 0,
                    threads: int = 8) -> tuple[str, Callable[[], None]]:
    """Serve a WSGI application on host:port (0: any free port) until stop() is called."""
    import waitress

    server = waitress.create_server(application, host=host, port=port, threads=threads,
                                    ident="consolidator")
    thread = threading.Thread(target=server.run, name="consolidator-api", daemon=True)
    thread.start()
    url = f"http://{host}:{server.effective_port}"

    def stop() -> None:
        server.close()
        thread.join(timeout=10)
    return url, stop
