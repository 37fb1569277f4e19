"""Issue 34: the unit had no watchdog, so a hung cycle went unnoticed. The daemon is now
Type=notify: READY=1 once its scheduler runs, WATCHDOG=1 from a scheduler job only while the
running work shows progress, STOPPING=1 on SIGTERM. A cycle hung on a cloud that never
answers stops the pings, so that systemd restarts the daemon."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from consolidator.app.config import config_from_sections
from consolidator.app.context import AppContext
from consolidator.app.liveness import Liveness
from consolidator.core.errors import ConsolidatorError
from consolidator.daemon import Daemon
from consolidator.store.db import make_engine, upgrade
from tests.functional.cli import run


@pytest.fixture
def notify_socket(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    """A datagram socket bound on a temp path, as systemd's $NOTIFY_SOCKET."""
    path = str(tmp_path / "notify")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(path)
        yield sock, path


def received(sock: socket.socket) -> bytes | None:
    """The datagram already waiting, or None: sd_notify's sendto is done before the call
    that made it returns, so nothing waiting means nothing was sent."""
    sock.setblocking(False)
    try:
        return sock.recv(4096)
    except BlockingIOError:
        return None


def test_a_cycle_hung_on_the_cloud_stops_the_watchdog_pings(
        tmp_path: Path, notify_socket: tuple[socket.socket, str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    sock, path = notify_socket
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}")
    upgrade(engine)
    entered, answer = threading.Event(), threading.Event()

    def connect() -> object:
        """A cloud that does not answer until the test lets it (then it refuses)."""
        entered.set()
        answer.wait()
        raise ConsolidatorError("cloud 'lab': no answer")

    config = config_from_sections({"daemon": {"hang_timeout": "60"}})
    daemon = Daemon(AppContext.of(config=config, engine=engine, connect=connect, cloud="lab"))
    now = [0.0]
    daemon.liveness = Liveness(60.0, clock=lambda: now[0])
    assert daemon.watchdog() and received(sock) == b"WATCHDOG=1"     # idle: alive

    cycle = threading.Thread(target=daemon.cycle, daemon=True)
    cycle.start()
    assert entered.wait(120), "the cycle never reached the cloud"
    assert daemon.watchdog() and received(sock) == b"WATCHDOG=1"     # just started
    now[0] += 61                                                    # no progress since
    assert not daemon.watchdog()
    assert received(sock) is None, "a hung cycle must not ping the watchdog"
    assert not daemon.watchdog() and received(sock) is None

    answer.set()                     # the cloud answers at last: the cycle ends
    cycle.join(timeout=600)        # a guard against a hang, not a speed target
    assert not cycle.is_alive()
    assert daemon.watchdog() and received(sock) == b"WATCHDOG=1"


def test_the_daemon_says_ready_pings_and_says_stopping(
        tmp_path: Path, notify_socket: tuple[socket.socket, str]) -> None:
    sock, path = notify_socket
    sock.settimeout(120)
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    env = {**os.environ, "NOTIFY_SOCKET": path, "WATCHDOG_USEC": "1000000",
           "CONSOLIDATOR_DB_URL": db_url}
    env.pop("WATCHDOG_PID", None)
    proc = subprocess.Popen([sys.executable, "-m", "consolidator", "--cloud", "lab", "daemon"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = sock.recv(4096).decode()
        assert first.startswith("READY=1\nSTATUS=schedule"), first
        assert sock.recv(4096) == b"WATCHDOG=1"
        proc.send_signal(signal.SIGTERM)
        while (message := sock.recv(4096)) == b"WATCHDOG=1":
            pass
        assert message.startswith(b"STOPPING=1"), message
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
