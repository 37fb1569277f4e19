"""The API (with its dashboard) served by a subprocess against a fake cloud whose Keystone
validates its tokens and lists it in the catalog under the type `consolidation`; a
snapshot and a plan stored by the local CLI; a daemon to carry out the API's jobs.

The fake cloud runs in the test's process (its Keystone's catalog is extended with the
API's URL); the API, the CLI and the daemon are subprocesses, as in production."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consolidator.emulators.fake.cloud import FakeCloud
from consolidator.scenario.files import parse_scenario
from tests.functional.cli import run
from tests.functional.prometheus_server import free_port
from tests.functional.waits import stop_process, wait_until

ROOT = Path(__file__).resolve().parents[2]
#: Serves consolidator.api.wsgi.make_app (the API with its dashboard), as the API process does.
SERVER = """
import json, os, sys, waitress
from consolidator.api.wsgi import make_app
from consolidator.app.context import AppContext
ctx = AppContext(config_file=sys.argv[1], cloud="fake",
                 db_url=os.environ["CONSOLIDATOR_DB_URL"])
auth = json.loads(sys.argv[3]) if len(sys.argv) > 3 else None   # another Keystone's
# As behind a TLS proxy on this host: waitress trusts its X-Forwarded-Proto.
waitress.serve(make_app(ctx, service_auth=auth),
               host="127.0.0.1", port=int(sys.argv[2]),
               threads=4, _quiet=True, trusted_proxy="127.0.0.1",
               trusted_proxy_headers="x-forwarded-proto")
"""
#: The daemon runs only the API's jobs: its cycle is once a year, no watch runs.
CONFIG = """[daemon]
schedule = 0 0 1 1 *
capacity_watch_interval = 0
job_interval = 0.5
[executor]
poll_interval = 0.05
"""


def scenario(hosts: int = 4) -> dict[str, Any]:
    """Hosts of 16 vCPUs, each with a Redfish BMC, holding 3 instances of 2 vCPUs: a plan
    empties half of them."""
    return {
        "hosts": [{"name": f"c{n}", "vcpus": 16, "memory_mb": 32768, "disk_gb": 200,
                   "availability_zone": "east" if n % 2 else "west",
                   "aggregates": ["gold"] if n <= 2 else [],
                   "bmc": {"driver": "redfish"}} for n in range(1, hosts + 1)],
        "instances": [{"name": f"vm-{n}-{i}", "host": f"c{n}", "vcpus": 2, "memory_mb": 2048,
                       "disk_gb": 10} for n in range(1, hosts + 1) for i in range(3)],
        "settings": {"migration_bandwidth_mb_s": 1e6, "service_up_delay_s": 0.1,
                     "bmc_graceful_delay_s": 0.05}}


@dataclass
class Stack:
    cloud: FakeCloud
    url: str
    env: dict[str, str]
    clouds_yaml: Path
    config: Path
    plan_id: str
    tmp: Path

    def cli(self, *args: str) -> Any:
        done = run("--config", str(self.config), "--cloud", "fake", *args, env=self.env)
        assert done.code == 0, done.err
        return done

    @contextmanager
    def daemon(self) -> Iterator[subprocess.Popen[str]]:
        """A daemon that carries out the API's jobs, until the block ends."""
        log = (self.tmp / "daemon.log").open("w")
        proc = subprocess.Popen([sys.executable, "-m", "consolidator", "--config",
                                 str(self.config), "--cloud", "fake", "daemon"],
                                env=self.env, stdout=log, stderr=subprocess.STDOUT, text=True)
        try:
            yield proc
        finally:
            stop_process(proc)
            log.close()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


@contextmanager
def api_stack(tmp_path: Path, doc: dict[str, Any] | None = None, *,
              service_auth: dict[str, str] | None = None) -> Iterator[Stack]:
    """The fake cloud, a snapshot and a proposed plan in the database, and the API with the
    dashboard listening (listed in the catalog); its tokens validated by the fake cloud's
    Keystone, or with service_auth (auth_token's options) by another one."""
    with FakeCloud(parse_scenario(doc or scenario()), bmc=True) as cloud:
        clouds_yaml = cloud.write_clouds_yaml(tmp_path / "clouds.yaml")
        bmc_yaml = cloud.write_bmc_yaml(tmp_path / "bmc.yaml")
        config = tmp_path / "consolidator.conf"
        config.write_text(CONFIG)
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("OS_")},
               "PYTHONPATH": str(ROOT), "OS_CLIENT_CONFIG_FILE": str(clouds_yaml),
               "CONSOLIDATOR_BMC_FILE": str(bmc_yaml),
               "CONSOLIDATOR_DB_URL": f"sqlite:///{tmp_path / 'consolidator.db'}"}
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        cloud.add_catalog_service("consolidation", "consolidator", url)
        stack = Stack(cloud, url, env, clouds_yaml, config, "", tmp_path)
        stack.cli("db", "upgrade")
        stack.cli("snapshot")
        stack.plan_id = json.loads(stack.cli("plan", "-f", "json").out)["id"]
        log = (tmp_path / "api.log").open("w")
        extra = [json.dumps(service_auth)] if service_auth else []
        server = subprocess.Popen([sys.executable, "-c", SERVER, str(config), str(port), *extra],
                                  env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
        try:
            wait_until(lambda: _answers(url + "/") or server.poll() is not None,
                       "the API to answer")
            assert server.poll() is None, (tmp_path / "api.log").read_text()
            yield stack
        finally:
            stop_process(server)
            log.close()
