"""The operator's whole flow through the API on the real Nova and Placement: the API
validates the real Keystone's tokens (the real-Nova harness has no identity service of its
own: every Nova caller is its admin), a 'consolidator daemon' process carries the jobs out
against the real Nova, its conductor and scheduler, and the BMCs. Snapshot, plan, the
maker's approval refused (four eyes), approval by a second user, apply watched to its end,
rollback; then Nova's own view says where every server is."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from consolidator.emulators.fake.process import stop_child
from tests.functional.api_world import write_config
from tests.functional.cli import run
from tests.functional.served import ServedCloud, _consolidator
from tests.functional.test_api_flow import Served, walk_the_flow
from tests.realkeystone.served import RealKeystone, served_keystone
from tests.realnova.served import NovaView, served_nova

pytestmark = pytest.mark.filterwarnings("ignore:::openstack.*", "ignore:::keystonemiddleware.*",
                                        "ignore:::oslo_config.*", "ignore:::oslo_policy.*",
                                        "ignore:::webob.*")

#: Three hosts, four servers: firstfit empties c3 and c2 onto c1 (two live migrations, two
#: hosts powered off), the rollback brings them back.
SCENARIO = {
    "hosts": [{"name": f"c{n}", "vcpus": 16, "memory_mb": 32768, "disk_gb": 500,
               "bmc": {"driver": "ipmi" if n % 2 else "redfish"}} for n in range(1, 4)],
    "instances": [{"name": f"vm-{h}-{k}", "host": h, "vcpus": 2, "memory_mb": 2048,
                   "disk_gb": 10} for h, n in (("c1", 2), ("c2", 1), ("c3", 1))
                  for k in range(n)]}


@contextmanager
def keystone_and_nova(tmp_path: Path) -> Iterator[tuple[RealKeystone, ServedCloud]]:
    """The real Keystone and the real Nova, started side by side (each takes tens of
    seconds), until the block ends."""
    with ExitStack() as stack, ThreadPoolExecutor(1) as pool:
        keystone_cm = served_keystone(tmp_path / "keystone")
        starting = pool.submit(keystone_cm.__enter__)
        try:
            nova = stack.enter_context(served_nova(SCENARIO, tmp_path / "nova"))
        finally:
            keystone = starting.result()
            stack.push(keystone_cm)
        yield keystone, nova


def test_the_operators_flow_through_the_api_on_the_real_nova(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from consolidator.api.dev_server import serve_in_thread
    from consolidator.api.wsgi import make_app
    from consolidator.app.context import AppContext

    (tmp_path / "nova").mkdir()
    config = write_config(tmp_path / "c.conf",
                          daemon={"schedule": "0 0 1 1 *", "job_interval": 0.5,
                                  "capacity_watch_interval": 0},
                          relief={"interval": 0}, planner={"n_plus_one": False},
                          executor={"poll_interval": 0.2, "migration_timeout": 120,
                                    "power_timeout": 120, "lease_ttl": 30},
                          review={"distinct_approver": True, "require_approval": True})
    db_url = f"sqlite:///{tmp_path / 'flow.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    with keystone_and_nova(tmp_path) as (keystone, served), ExitStack() as stack:
        monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(served.clouds_yaml))
        ctx = AppContext(config_file=str(config), db_url=db_url, cloud=served.cloud_name)
        api_url, stop_api = serve_in_thread(
            make_app(ctx, service_auth=keystone.auth_token_options()))
        stack.callback(stop_api)
        env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        env.update(OS_CLIENT_CONFIG_FILE=str(served.clouds_yaml),
                   CONSOLIDATOR_BMC_FILE=str(served.bmc_yaml), CONSOLIDATOR_DB_URL=db_url)
        daemon_log = tmp_path / "daemon.log"
        with daemon_log.open("w") as out:
            daemon = subprocess.Popen(
                [*_consolidator(), "--config", str(config), "--cloud", served.cloud_name,
                 "daemon"], stdout=out, stderr=subprocess.STDOUT, env=env, text=True)
        stack.callback(stop_child, daemon)
        nova = NovaView(served)
        before = nova.where()
        tokens = {p: keystone.token(p) for p in ("reader", "operator", "admin")}
        walk_the_flow(Served(served.clouds_yaml, api_url, served.control_url, tokens))
        # Nova's own view: every server back where it was, ACTIVE; every service enabled
        assert nova.where() == before, daemon_log.read_text()
        assert set(nova.statuses().values()) == {"ACTIVE"}
        assert {h: s.status for h, s in nova.services().items()} == \
            {h: "enabled" for h in ("c1", "c2", "c3")}
