"""A throw-away RabbitMQ broker from Debian's rabbitmq-server, for the notification tests and
the benchmark (tools/bench/notifications.py).

Debian's script runs the broker as the ``rabbitmq`` user, so its folders belong to that user;
each broker has its own node name and ports (RABBITMQ_NODE_PORT, RABBITMQ_DIST_PORT), and
``rabbitmqctl -n NAME status`` says when it is up. CONSOLIDATOR_TEST_RABBIT_URL names a broker
to use instead (the tests that stop the broker always start their own).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.functional.waits import PATIENCE_S

URL_VARIABLE = "CONSOLIDATOR_TEST_RABBIT_URL"
SERVER = "/usr/sbin/rabbitmq-server"
CTL = "/usr/sbin/rabbitmqctl"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Broker:
    """One RabbitMQ node on 127.0.0.1, its folders in a temporary directory."""

    def __init__(self) -> None:
        for tool in (SERVER, CTL):
            if not os.access(tool, os.X_OK):
                raise RuntimeError(f"{tool} is missing: install Debian's rabbitmq-server "
                                   "(apt-get install rabbitmq-server) or set " + URL_VARIABLE)
        if os.geteuid() != 0:
            raise RuntimeError("a throw-away RabbitMQ needs root (Debian's script runs it as "
                               "the rabbitmq user): run as root or set " + URL_VARIABLE)
        self.name = f"consolidator-{uuid.uuid4().hex[:10]}@localhost"
        self.port, self.dist_port = free_port(), free_port()
        self.base = Path(tempfile.mkdtemp(prefix="consolidator-rabbit-"))
        self.base.chmod(0o755)
        for sub in ("mnesia", "log"):
            (self.base / sub).mkdir()
        shutil.chown(self.base / "mnesia", "rabbitmq", "rabbitmq")
        shutil.chown(self.base / "log", "rabbitmq", "rabbitmq")
        self.env = {**os.environ, "RABBITMQ_NODENAME": self.name,
                    "RABBITMQ_NODE_IP_ADDRESS": "127.0.0.1",
                    "RABBITMQ_NODE_PORT": str(self.port),
                    "RABBITMQ_DIST_PORT": str(self.dist_port),
                    "RABBITMQ_MNESIA_BASE": str(self.base / "mnesia"),
                    "RABBITMQ_LOG_BASE": str(self.base / "log"),
                    "RABBITMQ_PID_FILE": str(self.base / "mnesia" / "node.pid")}
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"rabbit://guest:guest@127.0.0.1:{self.port}/"

    def ctl(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        return subprocess.run([CTL, "-n", self.name, *args], env=self.env, text=True,
                              capture_output=True, timeout=timeout, check=False)

    def start(self) -> None:
        """Start the node and wait until it answers (10 to 20 s on a quiet machine)."""
        self.process = subprocess.Popen([SERVER], env=self.env, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL, start_new_session=True)
        self._wait_up()

    def _wait_up(self) -> None:
        ends = time.monotonic() + PATIENCE_S
        while time.monotonic() < ends:
            if self.process is not None and self.process.poll() is not None:
                raise RuntimeError(f"rabbitmq-server {self.name} exited with "
                                   f"{self.process.returncode}: see {self.base / 'log'}")
            if self.ctl("status", timeout=30).returncode == 0 and self._listening():
                return
            time.sleep(0.5)
        raise RuntimeError(f"rabbitmq-server {self.name} did not start within {PATIENCE_S} s")

    def _listening(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                return True
        except OSError:
            return False

    def stop_app(self) -> None:
        """Stop the broker (the node stays, its AMQP port closes, every connection drops)."""
        result = self.ctl("stop_app")
        if result.returncode != 0:
            raise RuntimeError(f"rabbitmqctl stop_app: {result.stderr.strip()}")

    def start_app(self) -> None:
        """Start the broker again, and wait until it listens."""
        result = self.ctl("start_app")
        if result.returncode != 0:
            raise RuntimeError(f"rabbitmqctl start_app: {result.stderr.strip()}")
        self._wait_up()

    def stop(self) -> None:
        """End the node and remove its folders."""
        self.ctl("stop")
        if self.process is not None:
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, 9)
                self.process.wait(timeout=10)
        shutil.rmtree(self.base, ignore_errors=True)


@contextmanager
def broker() -> Iterator[Broker]:
    """A throw-away broker, stopped and removed at the end."""
    node = Broker()
    try:
        node.start()
        yield node
    finally:
        node.stop()


@contextmanager
def broker_url() -> Iterator[str]:
    """CONSOLIDATOR_TEST_RABBIT_URL when set, else a throw-away broker's URL."""
    given = os.environ.get(URL_VARIABLE)
    if given:
        yield given
        return
    with broker() as node:
        yield node.url
