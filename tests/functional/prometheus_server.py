"""A real Prometheus server (Debian's ``prometheus``) on 127.0.0.1 for the tests: it scrapes
the fake cloud's libvirt exporters and evaluates the shipped recording rules."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from consolidator.app.shipped import DEPLOY
from consolidator.emulators.fake.cloud import FakeCloud
from consolidator.emulators.fake.libvirt_exporter import scrape_configs
from tests.functional.waits import PATIENCE_S

RULES = DEPLOY / "prometheus" / "recording-rules.yml"
#: What a test that needs the server says when it is not installed: never a silent skip.
MISSING = ("prometheus is not installed: run tools/run-tests (README's test command), which "
           "installs Debian's prometheus, or 'sudo apt-get install prometheus'")


def prometheus_binary() -> str:
    """The path of Debian's prometheus server; fails the test in one line if it is absent."""
    found = shutil.which("prometheus") or (
        "/usr/bin/prometheus" if Path("/usr/bin/prometheus").exists() else None)
    if found is None:
        pytest.fail(MISSING, pytrace=False)
    return found


def free_port() -> int:
    """A TCP port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PrometheusServer:
    """One prometheus process with its own config and storage under a temp dir."""

    def __init__(self, cloud: FakeCloud, workdir: Path, *, interval: str = "1s",
                 rate_window: str = "3s") -> None:
        self.cloud, self.workdir, self.interval = cloud, workdir, interval
        self.rate_window = rate_window
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The HTTP API base URL ([telemetry] prometheus_url)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> PrometheusServer:
        """Write the config, start the server and wait until it is ready."""
        hosts = [h.name for h in self.cloud.cluster().hosts]
        address = self.cloud.base_url.split("//", 1)[1].rstrip("/")
        config = {"global": {"scrape_interval": self.interval,
                             "evaluation_interval": self.interval},
                  "rule_files": [str(self._rules())],
                  "scrape_configs": scrape_configs(address, hosts, self.interval)}
        path = self.workdir / "prometheus.yml"
        path.write_text(yaml.safe_dump(config))
        log = (self.workdir / "prometheus.log").open("wb")
        self.process = subprocess.Popen(
            [prometheus_binary(), f"--config.file={path}",
             f"--storage.tsdb.path={self.workdir / 'data'}",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + PATIENCE_S
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{self.url}/-/ready", timeout=1).status_code == 200:
                    return self
            except requests.RequestException:
                pass
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise RuntimeError(f"prometheus did not start: see {self.workdir / 'prometheus.log'}")

    def _rules(self) -> Path:
        """The shipped rules, their rate window fitted to this server's scrape interval
        (a rate over 2m of a series seconds old is divided by the whole 2m)."""
        path = self.workdir / "recording-rules.yml"
        path.write_text(RULES.read_text().replace("[2m]", f"[{self.rate_window}]"))
        return path

    def stop(self) -> None:
        """Stop the server."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def query(self, expr: str) -> list[dict[str, Any]]:
        """An instant query's result list."""
        body = requests.get(f"{self.url}/api/v1/query", params={"query": expr},
                            timeout=5).json()
        return body["data"]["result"]

    def wait_for(self, expr: str, count: int, timeout: float = PATIENCE_S
                 ) -> list[dict[str, Any]]:
        """Poll an instant query until it returns at least `count` series."""
        deadline = time.monotonic() + timeout
        result: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            result = self.query(expr)
            if len(result) >= count:
                return result
            time.sleep(0.25)
        raise AssertionError(f"{expr}: {len(result)} series after {timeout} s, wanted {count}")

    def __enter__(self) -> PrometheusServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
