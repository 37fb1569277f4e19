"""The `openstack consolidation ...` plugin, run by the real openstack command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from tests.functional.api_stack import api_stack
from tests.functional.openstack_cli import openstack
from tests.functional.served import served_cloud

#: Every command the plugin registers.
COMMANDS = ["snapshot create", "snapshot list", "snapshot show", "plan create", "plan list",
            "plan show", "plan approve", "plan cancel", "plan apply", "host list", "host show",
            "host drain", "host undrain", "host power on", "host power off",
            "rollback create", "journal list", "job show"]

SCENARIO = {"hosts": [{"name": "c1", "vcpus": 8, "memory_mb": 16384, "disk_gb": 100}],
            "instances": [{"name": "a0", "host": "c1", "vcpus": 1, "memory_mb": 512,
                           "disk_gb": 1}]}


def test_every_command_is_registered(tmp_path: Path) -> None:
    """`openstack command list --group consolidation` lists every command of the issue, and
    each one's help names its options."""
    clouds = tmp_path / "clouds.yaml"
    clouds.write_text(yaml.safe_dump({"clouds": {"none": {"auth_type": "none"}}}))
    osc = openstack(clouds, "none", tmp_path)
    done = osc("command", "list", "--group", "consolidation", "-f", "yaml")
    assert done.code == 0, done.err
    listed = {c for group in yaml.safe_load(done.out) for c in group["Commands"]}
    assert sorted(f"consolidation {c}" for c in COMMANDS) == sorted(listed)
    helped = osc("help", "consolidation", "plan", "create")
    assert helped.code == 0, helped.err
    for option in ("--algorithm", "--ranking", "--max-migrations", "--front", "--scope", "-f"):
        assert option in helped.out


def test_a_bad_api_version_is_one_line(tmp_path: Path) -> None:
    clouds = tmp_path / "clouds.yaml"
    clouds.write_text(yaml.safe_dump({"clouds": {"none": {"auth_type": "none"}}}))
    done = openstack(clouds, "none", tmp_path)(
        "--os-consolidation-api-version", "2.1", "consolidation", "plan", "list")
    assert done.code == 1
    assert done.err.strip().splitlines() == [
        "--os-consolidation-api-version 2.1: not a version of the consolidation API; "
        "give 1 or a microversion 1.N"]


def test_a_cloud_without_the_service_says_so(tmp_path: Path) -> None:
    """Against a catalog with no `consolidation` entry, a command fails with one line that says
    how to register the service, and exit code 1."""
    with served_cloud(SCENARIO, tmp_path, bmc=False) as served:
        osc = openstack(served.clouds_yaml, served.cloud_name, tmp_path)
        done = osc("consolidation", "plan", "list", "-f", "json")
    assert done.code == 1, done.out
    assert done.err.strip().splitlines() == [
        "no consolidation endpoint in the service catalog: register it with 'openstack "
        "service create --type consolidation' and an endpoint, or set "
        "consolidation_endpoint_override in clouds.yaml"]


def test_the_operator_flow_through_the_openstack_command(tmp_path: Path) -> None:
    """Against the API, found in the fake Keystone's catalog: a reader lists plans as JSON
    and is refused an approve in one line naming the rule, exit 1; the operator approves;
    the admin applies and waits for the job; the journal and the hosts show the result."""
    with api_stack(tmp_path) as stack:
        osc = openstack(stack.clouds_yaml, "fake-reader", tmp_path)
        listed = osc("consolidation", "plan", "list", "-f", "json")
        assert listed.code == 0, listed.err
        plans = json.loads(listed.out)
        assert [(p["id"], p["status"]) for p in plans] == [(stack.plan_id, "proposed")]
        assert set(plans[0]) >= {"id", "status", "algorithm", "migrations", "hosts_before",
                                 "hosts_after"}
        shown = osc("consolidation", "plan", "show", stack.plan_id, "-f", "value",
                    "-c", "status")
        assert (shown.code, shown.out.strip()) == (0, "proposed")

        refused = osc("consolidation", "plan", "approve", stack.plan_id)
        assert refused.code == 1
        assert refused.err.strip().splitlines() == [
            f"plan approve refused by policy (POST /v1/plans/{stack.plan_id}/approve): "
            "policy does not allow consolidation:plan:approve to your roles (HTTP 403)"]

        approved = osc("consolidation", "plan", "approve", stack.plan_id, "-f", "json",
                       cloud="fake-operator")
        assert approved.code == 0, approved.err
        assert json.loads(approved.out)["status"] == "approved"

        with stack.daemon():
            applied = osc("consolidation", "plan", "apply", stack.plan_id, "--wait", "-f",
                          "json", cloud="fake-admin")
        assert applied.code == 0, applied.err
        job = json.loads(applied.out)
        assert (job["kind"], job["state"], job["result"]["migrated"]) == ("apply", "succeeded",
                                                                          3)
        again = osc("consolidation", "job", "show", job["id"], "-f", "yaml")
        assert again.code == 0 and yaml.safe_load(again.out)["state"] == "succeeded"
        journal = osc("consolidation", "journal", "list", "--plan", stack.plan_id,
                      "--action", "migrate", "-f", "csv", "-c", "action", "-c", "state")
        assert journal.code == 0, journal.err
        assert journal.out.splitlines()[1:] == ['"migrate","succeeded"'] * 3
        hosts = osc("consolidation", "host", "list", "-f", "value", "-c", "name",
                    "--availability-zone", "east")
        assert (hosts.code, hosts.out.split()) == (0, ["c1", "c3"])


def test_the_commands_that_start_jobs(tmp_path: Path) -> None:
    """snapshot create, plan create, plan cancel, host drain, rollback create: each answers
    with its job, which --wait follows to its end while a daemon carries it out."""
    with api_stack(tmp_path) as stack, stack.daemon():
        operator = openstack(stack.clouds_yaml, "fake-operator", tmp_path)
        admin = openstack(stack.clouds_yaml, "fake-admin", tmp_path)

        def job(osc: Any, *args: str) -> dict[str, Any]:
            done = osc("consolidation", *args, "--wait", "-f", "json")
            assert done.code == 0, (args, done.err)
            found: dict[str, Any] = json.loads(done.out)
            assert found["state"] == "succeeded", found
            return found

        snapshot = job(operator, "snapshot", "create")["result"]["snapshot_id"]
        shown = operator("consolidation", "snapshot", "show", snapshot, "-f", "json")
        assert shown.code == 0 and json.loads(shown.out)["host_count"] == 4
        made = job(operator, "plan", "create", "--snapshot", snapshot, "--max-migrations",
                   "3")["result"]["plan_id"]
        cancelled = operator("consolidation", "plan", "cancel", made, "-f", "value", "-c",
                             "status")
        assert (cancelled.code, cancelled.out.strip()) == (0, "cancelled"), cancelled.err
        drained = job(admin, "host", "drain", "c4")["result"]["plan_id"]
        drain_plan = admin("consolidation", "plan", "show", drained, "-f", "json")
        assert json.loads(drain_plan.out)["status"] == "proposed"
        job(admin, "rollback", "create", snapshot)
        front = operator("consolidation", "plan", "create", "--front", "-f", "json")
        assert front.code == 0 and json.loads(front.out)["state"] in ("queued", "running",
                                                                        "succeeded")
