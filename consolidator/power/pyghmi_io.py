"""pyghmi's socket reads, made safe when several threads use IPMI in one process.

pyghmi (1.6.19) has one I/O thread that reads every IPMI socket of the process. It reads a
socket by switching it to non-blocking and then calling recvfrom(); every send, from any
thread, first switches the same socket back to blocking. When a send falls between the two,
the read blocks until a datagram reaches that one socket, and meanwhile the I/O thread reads
no other socket and wakes no waiter:

- an emulated BMC server stops answering every BMC once the last client of one BMC is done
  ("no reply to the session login" everywhere, then the watchdog's "no reply within 30 s");
- a client's waits run on past their time-outs until some other answer comes in.

install() replaces that read with one that never blocks, whatever the socket's mode.
"""

from __future__ import annotations

import socket
from typing import Any


def read_nowait(sock: Any, size: int) -> tuple[bytes, Any] | None:
    """One datagram and its sender, or None at once if none is waiting (the socket's
    blocking mode is left alone, so a send in another thread cannot make this wait).

    Under eventlet's monkey patching (the real-Nova backend's process) the socket is a
    GreenSocket, whose recvfrom waits for data whatever the flags: the real socket under it
    (.fd) is read instead."""
    if hasattr(sock, "fd"):
        sock = sock.fd
    try:
        return sock.recvfrom(size, socket.MSG_DONTWAIT)
    except OSError:
        return None


def install() -> None:
    """Make pyghmi's I/O thread read with read_nowait (the assignment is atomic and
    idempotent; a no-op where the platform has no MSG_DONTWAIT)."""
    if hasattr(socket, "MSG_DONTWAIT"):
        from pyghmi.ipmi.private import session

        session._io_recvfrom = read_nowait
