"""sd_notify without libsystemd: datagrams on a real AF_UNIX socket, as systemd reads them."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from consolidator.app.liveness import Liveness
from consolidator.telemetry.systemd import notify, watchdog_period


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    """A datagram socket bound on a temp path, as systemd's $NOTIFY_SOCKET."""
    path = str(tmp_path / "notify")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        sock.settimeout(30)
        yield sock, path


def test_each_notification_is_one_datagram(notify_socket: tuple[socket.socket, str]) -> None:
    sock, path = notify_socket
    assert notify("READY=1", "STATUS=schedule 0 * * * *", environ={"NOTIFY_SOCKET": path})
    assert sock.recv(4096) == b"READY=1\nSTATUS=schedule 0 * * * *"
    assert notify("WATCHDOG=1", environ={"NOTIFY_SOCKET": path})
    assert sock.recv(4096) == b"WATCHDOG=1"


def test_an_abstract_socket_is_addressed_with_a_leading_nul() -> None:
    name = f"consolidator-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(30)
        assert notify("READY=1", environ={"NOTIFY_SOCKET": "@" + name})
        assert sock.recv(4096) == b"READY=1"


def test_outside_systemd_nothing_is_sent(tmp_path: Path) -> None:
    assert not notify("READY=1", environ={})
    assert not notify("READY=1", environ={"NOTIFY_SOCKET": "relative/path"})
    assert not notify("READY=1", environ={"NOTIFY_SOCKET": str(tmp_path / "nobody")})


def test_the_watchdog_period_is_this_process_s() -> None:
    assert watchdog_period({"WATCHDOG_USEC": "30000000"}) == 30.0
    assert watchdog_period({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid())}) \
        == 30.0
    assert watchdog_period({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}) is None
    assert watchdog_period({"WATCHDOG_USEC": "junk"}) is None
    assert watchdog_period({}) is None


def test_liveness_counts_only_running_work_without_progress_as_hung() -> None:
    now = [0.0]
    live = Liveness(60.0, clock=lambda: now[0])
    now[0] = 1000.0
    assert live.stalled() is None                  # idle for long: alive
    live.working("cycle")
    now[0] = 1050.0
    assert live.stalled() is None
    live.pulse()
    now[0] = 1100.0
    assert live.stalled() is None                  # 50 s since the last pulse
    now[0] = 1111.0
    assert "the cycle has shown no progress for 61 s" in (live.stalled() or "")
    live.idle()
    assert live.stalled() is None
