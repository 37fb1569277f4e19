"""The operator's whole flow through the API, against the fake cloud's Keystone and BMCs:
'fake-cloud serve --with-api' serves the API (found through the Keystone catalog), a
'consolidator daemon' process carries the jobs out. Snapshot and plan by the operator, the
operator's own approval refused (four eyes), approval by the admin, apply, the job watched
to its end, rollback; the journal names each person."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests
import yaml

from consolidator.emulators.fake.process import stop_child
from tests.functional.api_world import api_world, write_config
from tests.functional.cli import run
from tests.functional.waits import PATIENCE_S, wait_until

pytestmark = pytest.mark.filterwarnings("ignore:::openstack.*", "ignore:::keystonemiddleware.*",
                                        "ignore:::oslo_config.*", "ignore:::oslo_policy.*",
                                        "ignore:::webob.*")

SCENARIO = {
    "settings": {"migration_bandwidth_mb_s": 1e6, "service_up_delay_s": 0.1,
                 "bmc_graceful_delay_s": 0.05},
    "hosts": [{"name": f"c{n}", "vcpus": 16, "memory_mb": 65536, "disk_gb": 1000,
               "bmc": {"driver": "redfish"}} for n in range(1, 5)],
    "instances": [{"name": f"vm-{h}-{k}", "host": f"c{h}", "vcpus": 3, "memory_mb": 4096,
                   "disk_gb": 20} for h in range(1, 5) for k in range(2)]}


@dataclass
class Served:
    """The fake cloud with the API, and a daemon, as processes."""

    clouds_yaml: Path
    api_url: str
    control_url: str
    tokens: dict[str, str]

    def call(self, persona: str, method: str, path: str, body: Any = None,
             headers: dict[str, str] | None = None) -> requests.Response:
        sent = {"X-Auth-Token": self.tokens[persona], **(headers or {})}
        return requests.request(method, self.api_url + path, json=body, headers=sent,
                                timeout=PATIENCE_S)

    def power(self) -> dict[str, str]:
        hosts = requests.get(f"{self.control_url}/state", timeout=PATIENCE_S).json()["hosts"]
        return {name: h["power"] for name, h in hosts.items()}

    def finished(self, job: dict[str, Any]) -> dict[str, Any]:
        """Watch a job until it ends (the daemon picks it up); its last state."""
        seen: list[str] = []

        def ended() -> dict[str, Any] | None:
            now = self.call("reader", "GET", f"/v1/jobs/{job['id']}").json()["job"]
            seen.append(now["state"])
            return now if now["state"] in ("succeeded", "failed", "expired") else None
        return wait_until(ended, f"job {job['kind']} {job['id']} ends")


def _consolidator(*args: str) -> list[str]:
    return [sys.executable, "-m", "consolidator", *args]


@contextmanager
def flow_bed(tmp_path: Path, *, with_api: bool = True,
             serve_api: Callable[[Path, str], tuple[str, Callable[[], None]]] | None = None,
             tokens: Callable[[str], str] | None = None) -> Iterator[Served]:
    """The fake cloud (with --with-api, or the API that serve_api(config, db_url) serves),
    and a daemon, as processes; tokens(persona) issues tokens (default: the fake cloud's
    Keystone, whose catalog then must list the API)."""
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO))
    config = write_config(tmp_path / "c.conf",
                          daemon={"schedule": "0 0 1 1 *", "job_interval": 0.5,
                                  "capacity_watch_interval": 0},
                          relief={"interval": 0}, executor={"poll_interval": 0.05},
                          review={"distinct_approver": True, "require_approval": True})
    db_url = f"sqlite:///{tmp_path / 'flow.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    clouds, bmcs = tmp_path / "clouds.yaml", tmp_path / "bmc.yaml"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    env.update(OS_CLIENT_CONFIG_FILE=str(clouds), CONSOLIDATOR_BMC_FILE=str(bmcs),
               CONSOLIDATOR_DB_URL=db_url)
    cloud_log, daemon_log = tmp_path / "cloud.log", tmp_path / "daemon.log"
    with cloud_log.open("w") as out:
        cloud = subprocess.Popen(_consolidator(
            "--config", str(config), "fake-cloud", "serve", "--scenario", str(scenario),
            "--write-clouds-yaml", str(clouds), "--cloud-name", "fake", "--bmc",
            "--write-bmc-yaml", str(bmcs), *(["--with-api"] if with_api else [])),
            stdout=out, stderr=subprocess.STDOUT, env=env, text=True)
    daemon = None
    with ExitStack() as stack:
        stack.callback(stop_child, cloud)
        wait_until(lambda: clouds.exists() and bmcs.exists() or cloud.poll() is not None,
                   "the fake cloud writes its files")
        assert cloud.poll() is None, cloud_log.read_text()
        import openstack

        entries = yaml.safe_load(clouds.read_text())["clouds"]
        conns = {p: openstack.connect(load_yaml_config=False, load_envvars=False,
                                      **entries[f"fake-{p}"])
                 for p in ("reader", "operator", "admin")}
        if serve_api is None:
            # the API is found as Nova is: through the Keystone catalog
            api_url = conns["reader"].session.get_endpoint(service_type="consolidation",
                                                           interface="public").rstrip("/")
            assert api_url in cloud_log.read_text()
        else:
            api_url, stop_api = serve_api(config, db_url)
            stack.callback(stop_api)
        auth_url = entries["fake"]["auth"]["auth_url"]
        control = re.sub(r"/identity/v3/?$", "/_fake", auth_url)
        with daemon_log.open("w") as out:
            daemon = subprocess.Popen(_consolidator("--config", str(config), "--cloud", "fake",
                                                    "daemon"), stdout=out,
                                      stderr=subprocess.STDOUT, env=env, text=True)
        stack.callback(stop_child, daemon)
        issued = {p: (tokens(p) if tokens is not None else c.auth_token)
                  for p, c in conns.items()}
        yield Served(clouds, api_url, control, issued)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    with flow_bed(tmp_path) as running:
        yield running


def test_the_operators_flow_through_the_api(served: Served) -> None:
    walk_the_flow(served)


def walk_the_flow(served: Served) -> None:
    """Snapshot, plan, four eyes, approval, apply watched to its end, rollback, journal."""
    before = served.power()
    assert set(before.values()) == {"on"}
    # the operator snapshots and plans
    asked = served.call("operator", "POST", "/v1/snapshots", {})
    assert asked.status_code == 202 and asked.headers["Location"].endswith(
        f"/v1/jobs/{asked.json()['job']['id']}")
    snapshot_id = served.finished(asked.json()["job"])["result"]["snapshot_id"]
    asked = served.call("operator", "POST", "/v1/plans",
                        {"snapshot_id": snapshot_id, "algorithm": "firstfit"})
    assert asked.status_code == 202, asked.text
    made = served.finished(asked.json()["job"])
    assert made["state"] == "succeeded", made
    plan_id = made["result"]["plan_id"]
    plan = served.call("reader", "GET", f"/v1/plans/{plan_id}")
    assert plan.json()["plan"]["created_by"]["user_name"] == "operator"
    assert plan.json()["plan"]["power_off"], plan.json()
    # the maker cannot approve it; a second user can
    own = served.call("operator", "POST", f"/v1/plans/{plan_id}/approve",
                      headers={"If-Match": plan.headers["ETag"]})
    assert own.status_code == 403 and own.json()["errors"][0]["code"] == \
        "consolidation.four_eyes", own.text
    approved = served.call("admin", "POST", f"/v1/plans/{plan_id}/approve",
                           headers={"If-Match": plan.headers["ETag"]})
    assert approved.status_code == 200, approved.text
    # the admin applies it; the daemon carries it out; the job is watched to its end
    applied = served.call("admin", "POST", f"/v1/plans/{plan_id}/apply",
                          headers={"If-Match": approved.headers["ETag"]})
    assert applied.status_code == 202, applied.text
    done = served.finished(applied.json()["job"])
    assert done["state"] == "succeeded", done
    off = set(done["result"]["powered_off"])
    assert off and {h for h, p in served.power().items() if p == "off"} == off
    assert served.call("reader", "GET", f"/v1/plans/{plan_id}").json()["plan"]["status"] == \
        "succeeded"
    # the rollback puts everything back
    rolled = served.call("admin", "POST", "/v1/rollbacks", {"snapshot_id": snapshot_id})
    assert rolled.status_code == 202, rolled.text
    back = served.finished(rolled.json()["job"])
    assert back["state"] == "succeeded", back
    assert served.power() == before
    assert served.call("reader", "GET", "/v1/rollbacks").json()["rollbacks"]
    # the journal names who asked, approved and applied, with their request ids
    rows = served.call("reader", "GET", "/v1/journal?action=approve,api_request").json()
    people = {(r["action"], r["params"]["actor"]["user_name"]) for r in rows["journal"]}
    assert {("approve", "cloud-admin"), ("api_request", "operator"),
            ("api_request", "cloud-admin")} <= people
    approval = next(r for r in rows["journal"] if r["action"] == "approve")
    assert approval["params"]["actor"]["request_id"] == approved.headers[
        "x-openstack-request-id"]
    assert set(approval["params"]["actor"]["roles"]) >= {"admin", "member", "reader"}
    assert "cloud-admin" in approval["operator"]


def test_a_job_no_daemon_picks_up_says_so(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    with api_world(tmp_path, monkeypatch, api={"job_timeout": 0.5}) as world:
        job = world.call("POST", "/v1/snapshots", persona="operator", body={}).get_json()["job"]

        def expired() -> dict[str, Any] | None:
            now = world.call("GET", f"/v1/jobs/{job['id']}", persona="reader").get_json()
            return now["job"] if now["job"]["state"] == "expired" else None
        found = wait_until(expired, "the unclaimed job expires")
        assert "no daemon picked it up within 0.5 s" in found["error"]
