"""The safety test's notification receiver: a webhook on 127.0.0.1 that answers at once, or
trickles one answer a byte at a time (issue 33 case 6)."""

from __future__ import annotations

import http.server
import threading
import time
from typing import Any


class Webhook:
    """A notification receiver on 127.0.0.1: prompt, or (slow) trickling its answer."""

    def __init__(self) -> None:
        self.slow_s = 0.0
        self.stopping = False
        self.received = 0
        world = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                world.received += 1
                slow, world.slow_s = world.slow_s, 0.0      # one slow answer, then prompt
                answer = (b"HTTP/1.1 200 OK\r\nX-Pad: " + b"x" * int(slow)
                          + b"\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                step = 1 if slow else len(answer)
                for i in range(0, len(answer), step):     # status line, headers, body
                    try:
                        self.wfile.write(answer[i:i + step])
                        self.wfile.flush()
                    except OSError:
                        return
                    if slow and not world.stopping:   # a byte at a time, ~slow s in all
                        time.sleep(slow / len(answer))
                self.close_connection = True

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        """Where it listens."""
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def start(self) -> None:
        """Serve in a thread."""
        self.thread.start()

    def stop(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()
