"""`openstack consolidation ...` and the dashboard against the real Keystone: real tokens,
real role assignments (reader, member, admin on project ops), the API found in the real
catalog."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import requests

from tests.functional.api_stack import api_stack
from tests.functional.openstack_cli import openstack
from tests.realkeystone.served import RealKeystone


def test_the_openstack_command_and_the_dashboard(real_keystone: RealKeystone,
                                                 tmp_path: Path) -> None:
    with api_stack(tmp_path, service_auth=real_keystone.auth_token_options()) as stack:
        real_keystone.set_api_url(stack.url)
        osc = openstack(real_keystone.clouds_yaml, "ks-reader", tmp_path)
        listed = osc("consolidation", "plan", "list", "-f", "json")
        assert listed.code == 0, listed.err
        assert [(p["id"], p["status"]) for p in json.loads(listed.out)] == [
            (stack.plan_id, "proposed")]
        for args in (("snapshot", "list"), ("host", "list"), ("journal", "list"),
                     ("plan", "show", stack.plan_id), ("host", "show", "c1")):
            done = osc("consolidation", *args, "-f", "json")
            assert done.code == 0, (args, done.err)
            json.loads(done.out)

        refused = osc("consolidation", "plan", "approve", stack.plan_id)
        assert refused.code == 1
        assert refused.err.strip().splitlines() == [
            f"plan approve refused by policy (POST /v1/plans/{stack.plan_id}/approve): "
            "policy does not allow consolidation:plan:approve to your roles (HTTP 403)"]
        drain = osc("consolidation", "host", "drain", "c1", cloud="ks-operator")
        assert drain.code == 1 and "consolidation:host:drain" in drain.err

        approved = osc("consolidation", "plan", "approve", stack.plan_id, "-f", "value",
                       "-c", "status", cloud="ks-operator")
        assert (approved.code, approved.out.strip()) == (0, "approved"), approved.err
        with stack.daemon():
            applied = osc("consolidation", "plan", "apply", stack.plan_id, "--wait", "-f",
                          "json", cloud="ks-admin")
        assert applied.code == 0, applied.err
        job = json.loads(applied.out)
        assert (job["state"], job["requester"]["user_name"]) == ("succeeded", "cloud-admin")

        # The dashboard signs in through the same Keystone: a reader sees the plan, and no
        # button; a forged approve is refused.
        board = stack.url + "/dashboard"
        session = requests.Session()
        signed = session.post(board + "/login", data={
            "username": "reader", "password": "reader-secret", "project": "ops"}, timeout=120)
        assert signed.status_code == 200 and "/dashboard/hosts" in signed.url
        page = session.get(board + f"/plans/{stack.plan_id}", timeout=120)
        assert page.status_code == 200 and "succeeded" in page.text
        assert 'id="approve"' not in page.text and 'id="no-actions"' in page.text
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        forged = session.post(board + f"/plans/{stack.plan_id}/cancel",
                              data={"csrf": csrf, "etag": "*"}, timeout=120)
        assert forged.status_code == 403 and "consolidation:plan:cancel" in forged.text


def test_the_openstack_host_commands(real_keystone: RealKeystone, tmp_path: Path) -> None:
    """`host drain`, `host power off`, `host power on` and `host undrain` through the real
    `openstack` command, as the admin of the real Keystone: each answers with its job, which a
    daemon carries out, and the host shows the result. An operator's power-off is refused in
    one line naming the rule, exit 1."""
    with api_stack(tmp_path, service_auth=real_keystone.auth_token_options()) as stack:
        real_keystone.set_api_url(stack.url)
        admin = openstack(real_keystone.clouds_yaml, "ks-admin", tmp_path)

        def job(*args: str, cloud: str = "ks-admin") -> dict[str, Any]:
            done = admin("consolidation", *args, "--wait", "-f", "json", cloud=cloud)
            assert done.code == 0, (args, done.err)
            found: dict[str, Any] = json.loads(done.out)
            assert found["state"] == "succeeded", found
            return found

        def host(name: str) -> dict[str, Any]:
            done = admin("consolidation", "host", "show", name, "-f", "json")
            assert done.code == 0, done.err
            found: dict[str, Any] = json.loads(done.out)
            return found

        refused = admin("consolidation", "host", "power", "off", "c4", cloud="ks-operator")
        assert refused.code == 1
        assert refused.err.strip().splitlines() == [
            "host power off refused by policy (POST /v1/hosts/c4/power): policy does not "
            "allow consolidation:host:power to your roles (HTTP 403)"]

        c4 = stack.cloud.state.hosts["c4"]          # what the fake cloud says of c4
        with stack.daemon():
            drain_plan = job("host", "drain", "c4")["result"]["plan_id"]
            approved = admin("consolidation", "plan", "approve", drain_plan, "-f", "value",
                             "-c", "status", cloud="ks-operator")
            assert (approved.code, approved.out.strip()) == (0, "approved"), approved.err
            assert job("plan", "apply", drain_plan)["result"]["migrated"] == 3
            assert (c4.status, c4.servers) == ("disabled", {})
            assert host("c4")["recorded_state"] == "drained"

            off = job("host", "power", "off", "c4")
            assert (off["kind"], off["result"]) == ("power_off", {"host": "c4", "power": "off"})
            assert off["requester"]["user_name"] == "cloud-admin"
            assert (c4.power, host("c4")["recorded_state"]) == ("off", "off")

            on = job("host", "power", "on", "c4")
            assert (on["kind"], on["result"]) == ("power_on", {"host": "c4", "power": "on"})
            assert c4.power == "on"

            undrained = job("host", "undrain", "c4")
            assert undrained["kind"] == "undrain" and undrained["result"]["lines"]
            assert (c4.status, c4.power) == ("enabled", "on")
            assert host("c4")["recorded_state"] == "in service"
