"""pyghmi's I/O thread must never block in a read: it is the one reader of every IPMI socket.

pyghmi reads a socket by switching it to non-blocking and then calling recvfrom(); a send
from another thread switches it back to blocking first. These tests put that send between
the two, deterministically, on a real UDP socket on 127.0.0.1.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from pyghmi.ipmi.private import session

from consolidator.power import pyghmi_io

#: pyghmi's own read, kept before any test installs ours.
ORIGINAL_READ = session._io_recvfrom


class _SendLandsBetween:
    """A UDP socket whose every switch to non-blocking is undone at once, as when another
    thread's send (pyghmi's _io_sendto sets blocking) falls just before the read."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def setblocking(self, flag: bool) -> None:
        self.sock.setblocking(True)

    def recvfrom(self, *args: Any) -> Any:
        return self.sock.recvfrom(*args)


@pytest.fixture
def udp() -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    yield sock
    sock.close()


def _read_in_thread(read: Any, sock: Any, udp: socket.socket) -> tuple[bool, dict[str, Any]]:
    """read(sock, 3000) in a thread given 2 s; whether it was still waiting (it is then
    woken by a datagram to udp, the socket under sock), and what it returned."""
    box: dict[str, Any] = {}
    thread = threading.Thread(target=lambda: box.setdefault("got", read(sock, 3000)),
                              daemon=True)
    thread.start()
    thread.join(2)
    stuck = thread.is_alive()
    if stuck:  # free the thread before the test fails
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as waker:
            waker.sendto(b"wake", udp.getsockname())
        thread.join(2)
    return stuck, box


def test_pyghmis_read_is_nonblocking_once_installed(udp: socket.socket,
                                                    pyghmis_own_read: None) -> None:
    """With nothing waiting, the read the I/O thread uses returns None at once even though
    a send made the socket blocking (pyghmi's own read waits for the next datagram)."""
    pyghmi_io.install()
    stuck, box = _read_in_thread(session._io_recvfrom, _SendLandsBetween(udp), udp)
    assert not stuck, "pyghmi's read blocked on an empty socket"
    assert box["got"] is None


def test_a_waiting_datagram_is_read_with_its_sender(udp: socket.socket) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as peer:
        peer.bind(("127.0.0.1", 0))
        peer.sendto(b"\x06\x00\xff\x07", udp.getsockname())
        udp.setblocking(True)
        data, sender = pyghmi_io.read_nowait(udp, 3000)  # type: ignore[misc]
        assert (data, sender) == (b"\x06\x00\xff\x07", peer.getsockname())
    assert pyghmi_io.read_nowait(udp, 3000) is None


def test_an_eventlet_green_socket_is_read_without_waiting(udp: socket.socket) -> None:
    """The real-Nova backend runs monkey-patched by eventlet: pyghmi's sockets are then
    GreenSockets, whose recvfrom waits for a datagram even with MSG_DONTWAIT."""
    from eventlet.greenio import GreenSocket

    stuck, box = _read_in_thread(pyghmi_io.read_nowait, GreenSocket(udp), udp)
    assert not stuck, "the read waited on an empty green socket"
    assert box["got"] is None


@pytest.fixture
def pyghmis_own_read() -> Iterator[None]:
    """pyghmi's original read in place for the test, and whatever was there after it."""
    before = session._io_recvfrom
    session._io_recvfrom = ORIGINAL_READ
    yield
    session._io_recvfrom = before


def test_an_ipmi_driver_installs_it(pyghmis_own_read: None) -> None:
    from consolidator.power.driver import BmcConfig
    from consolidator.power.ipmi import IpmiDriver

    IpmiDriver(BmcConfig(host="h", driver="ipmi", address="127.0.0.1", port=None, username="u",
                         password="p"))
    assert session._io_recvfrom is pyghmi_io.read_nowait


def test_the_emulated_bmcs_install_it() -> None:
    """In a process of their own, as they run (never beside a pyghmi client)."""
    code = ("from pyghmi.ipmi.private import session\n"
            "from consolidator.emulators.fake.ipmi import IpmiBmcs\n"
            "from consolidator.power.pyghmi_io import read_nowait\n"
            "IpmiBmcs(None, [])\n"
            "print(session._io_recvfrom is read_nowait)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    assert out.stdout.strip() == "True"
