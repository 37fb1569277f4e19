"""What python-openstackclient (with osc-placement) answers about a served cloud, normalised so
that the fake cloud and the real Nova can be compared: uuids become names, and what differs by
nature (ids, timestamps, the virt driver's cpu_info and capability traits, Nova's reserved
host memory) is left out.

The scenario: c1 and c2 in zone east (Nova's 'az-east' aggregate), c4 in the aggregate
freepool, c2 with the trait CUSTOM_MAINT; a0-a2 on c1, b0 on c2, d0 on c3. b0 is live-migrated
to c4 with 'openstack server migrate' before the questions are asked."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.functional.drain_story import scenario as drain_scenario
from tests.functional.served import ServedCloud

#: The hypervisor fields both backends derive from the scenario (at 2.87, with the uptime).
#: Not the used ones: the real-Nova backend runs no periodic task, so its resource tracker
#: may keep a retried boot's claim (tests/functional/test_openstack_client.py checks them
#: against the scenario).
HYPERVISOR_KEYS = ("hypervisor_hostname", "state", "status", "service_host", "aggregates",
                   "vcpus", "memory_mb", "local_gb", "uptime", "users", "load_average",
                   "host_time")
#: The used fields, from the fake cloud only.
HYPERVISOR_USED = ("vcpus_used", "local_gb_used", "running_vms")


def scenario() -> dict[str, Any]:
    """The drain story's cloud with zones, an aggregate and a custom trait."""
    doc = drain_scenario()
    for host in doc["hosts"]:
        if host["name"] in ("c1", "c2"):
            host["availability_zone"] = "east"
    doc["hosts"][1]["traits"] = ["CUSTOM_MAINT"]
    doc["hosts"][3]["aggregates"] = ["freepool"]
    return doc


class Client:
    """Runs `openstack ... -f json` against one served cloud."""

    def __init__(self, served: ServedCloud) -> None:
        self.served = served
        entry = yaml.safe_load(served.clouds_yaml.read_text())["clouds"][served.cloud_name]
        # Without Keystone (the real-Nova backend) osc-placement finds Placement only
        # through --os-endpoint; openstacksdk's own clients read the endpoint overrides.
        override = entry.get("placement_endpoint_override")
        self.placement = ["--os-endpoint", override] if override else []

    def __call__(self, *args: str, placement: bool = False, fmt: bool = True) -> Any:
        exe = Path(sys.executable).with_name("openstack")
        env = {"OS_CLIENT_CONFIG_FILE": str(self.served.clouds_yaml),
               "OS_CLOUD": self.served.cloud_name, "PATH": str(exe.parent)}
        command = [str(exe), *(self.placement if placement else []), *args]
        if fmt:
            command += ["-f", "json"]
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=180)
        assert done.returncode == 0, f"openstack {' '.join(args)}: {done.stderr}"
        return json.loads(done.stdout) if fmt and done.stdout.strip() else None


def migrate_b0(osc: Client) -> None:
    """Live-migrate b0 from c2 to c4 through the client, and wait for it."""
    osc("server", "migrate", "--live-migration", "--host", "c4", "--wait", "b0", fmt=False)


def answers(osc: Client) -> dict[str, Any]:
    """The normalised answers to every question the fake must answer as Nova does."""
    out: dict[str, Any] = {}
    providers = {p["uuid"]: p["name"] for p in osc("resource", "provider", "list",
                                                   placement=True)}
    uuid_of = {name: uuid for uuid, name in providers.items()}
    aggregates = {a["UUID"]: a["Name"] for a in osc("aggregate", "list")}
    out["aggregate list"] = sorted((a["Name"], a["Availability Zone"])
                                   for a in osc("aggregate", "list"))
    shown = osc("--os-compute-api-version", "2.87", "hypervisor", "show", "c1")
    out["hypervisor show c1 (2.87)"] = {k: shown.get(k) for k in HYPERVISOR_KEYS}
    out["server event list b0"] = [e["Action"] for e in osc("server", "event", "list", "b0")]
    newest = osc("server", "event", "list", "b0")[0]["Request ID"]
    events = osc("server", "event", "show", "b0", newest)["events"]
    out["server event show b0 (live-migration)"] = sorted(
        (e["event"], e["result"], None if e["event"].startswith("conductor") else e["host"])
        for e in events)
    for amount in (1, 8, 12):
        out[f"resource provider list --resource VCPU={amount}"] = sorted(
            p["name"] for p in osc("resource", "provider", "list", "--resource",
                                   f"VCPU={amount}", placement=True))
    for trait in ("COMPUTE_NODE", "CUSTOM_MAINT"):
        out[f"resource provider list --required {trait}"] = sorted(
            p["name"] for p in osc("--os-placement-api-version", "1.18", "resource",
                                   "provider", "list", "--required", trait, placement=True))
    for uuid, name in aggregates.items():
        out[f"resource provider list --member-of {name}"] = sorted(
            p["name"] for p in osc("--os-placement-api-version", "1.3", "resource",
                                   "provider", "list", "--member-of", uuid, placement=True))
    for version in ("1.10", "1.17"):
        out[f"allocation candidate list --resource VCPU=1 ({version})"] = sorted(
            (providers[c["resource provider"]], c["allocation"],
             c["inventory used/capacity"])
            for c in osc("--os-placement-api-version", version, "allocation", "candidate",
                         "list", "--resource", "VCPU=1", placement=True))
    b0 = _server_id(osc, "b0")
    out["resource provider allocation show b0"] = sorted(
        (providers[a["resource_provider"]], json.dumps(a["resources"], sort_keys=True))
        for a in osc("resource", "provider", "allocation", "show", b0, placement=True))
    for host in ("c1", "c4"):
        out[f"resource provider aggregate list {host} (1.19)"] = sorted(
            aggregates[a["uuid"]] for a in osc(
                "--os-placement-api-version", "1.19", "resource", "provider", "aggregate",
                "list", uuid_of[host], placement=True))
    out["resource class list"] = [c["name"] for c in osc("resource", "class", "list",
                                                         placement=True)]
    out["trait list --name startswith:CUSTOM_"] = sorted(
        t["name"] for t in osc("--os-placement-api-version", "1.6", "trait", "list", "--name",
                               "startswith:CUSTOM_", placement=True))
    conn = osc.served.connect()
    out["GET /limits (absolute)"] = conn.compute.get("/limits").json()["limits"]["absolute"]
    usage = conn.compute.get("/os-simple-tenant-usage?detailed=1").json()["tenant_usages"]
    out["GET /os-simple-tenant-usage (servers)"] = sorted(
        (s["name"], s["vcpus"], s["memory_mb"], s["local_gb"], s["state"], s["flavor"])
        for t in usage for s in t["server_usages"])
    return out


def _server_id(osc: Client, name: str) -> str:
    """A server's id, read through openstacksdk (the real-Nova backend has no Keystone for
    'server list' to resolve names with)."""
    conn = osc.served.connect()
    return next(s.id for s in conn.compute.servers(all_projects=True) if s.name == name)
