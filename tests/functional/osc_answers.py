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
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

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
    out.update(totals_answers(osc))
    out.update(server_filter_answers(osc))
    return out


#: The hypervisor statistics both backends derive from the scenario (not the used ones).
STATISTICS_KEYS = ("count", "vcpus", "memory_mb", "local_gb")


def totals_answers(osc: Client) -> dict[str, Any]:
    """Hypervisor statistics, the hosts API, quota sets, and the control services' heartbeat
    (issue 34): what real Nova has below the microversions that removed them."""
    out: dict[str, Any] = {}
    stats = osc("hypervisor", "stats", "show")
    out["hypervisor stats show"] = {k: stats[k] for k in STATISTICS_KEYS}
    conn = osc.served.connect()

    def status(path: str, version: str) -> int:
        return int(conn.compute.get(path, microversion=version).status_code)

    for version in ("2.87", "2.88"):
        out[f"GET /os-hypervisors/statistics ({version})"] = status(
            "/os-hypervisors/statistics", version)
    for version in ("2.42", "2.43"):
        out[f"GET /os-hosts ({version})"] = status("/os-hosts", version)
    # The control services' host is the deployment's own name: compare their topics.
    hosts = conn.compute.get("/os-hosts", microversion="2.1").json()["hosts"]
    out["GET /os-hosts"] = sorted(
        (h["host_name"] if h["service"] == "compute" else "CONTROLLER", h["service"], h["zone"])
        for h in hosts)
    shown = conn.compute.get("/os-hosts/c1", microversion="2.1").json()["host"]
    # (used_now) is the resource tracker's (see HYPERVISOR_USED), projects are ids.
    out["GET /os-hosts/c1"] = [
        (r["resource"]["project"] if r["resource"]["project"].startswith("(") else
         "PROJECT", r["resource"]["cpu"], r["resource"]["disk_gb"])
        for r in shown if r["resource"]["project"] != "(used_now)"]
    out["GET /os-hosts/controller"] = status("/os-hosts/controller", "2.1")
    project = next(iter(conn.compute.servers(all_projects=True))).project_id
    for version in ("2.1", "2.36", "2.57"):
        quotas = conn.compute.get(f"/os-quota-sets/{project}",
                                  microversion=version).json()["quota_set"]
        out[f"GET /os-quota-sets/PROJECT ({version})"] = {
            k: v for k, v in quotas.items() if k != "id"}
    out["GET /os-quota-sets/PROJECT/defaults (2.57)"] = {
        k: v for k, v in conn.compute.get(f"/os-quota-sets/{project}/defaults",
                                          microversion="2.57").json()["quota_set"].items()
        if k != "id"}
    out["GET /os-quota-sets/PROJECT/detail (2.57)"] = {
        k: v for k, v in conn.compute.get(f"/os-quota-sets/{project}/detail",
                                          microversion="2.57").json()["quota_set"].items()
        if k != "id"}
    migrated = conn.compute.get("/os-migrations").json()["migrations"][0]["created_at"]
    services = conn.compute.get("/os-services").json()["services"]
    out["os-services: control services updated since b0's migration"] = sorted(
        (s["binary"], s["updated_at"] >= migrated) for s in services
        if s["binary"] != "nova-compute")
    return out


def server_filter_answers(osc: Client) -> dict[str, Any]:
    """GET /servers/detail with a name or node as a regular expression, and changes-since
    and changes-before around b0's migration (the only server updated since its boot)."""
    conn = osc.served.connect()

    def names(query: str, version: str = "2.66") -> list[str] | int:
        resp = conn.compute.get(f"/servers/detail?all_tenants=1&{query}",
                                microversion=version)
        if resp.status_code != 200:
            return int(resp.status_code)
        return sorted(s["name"] for s in resp.json()["servers"] if s["status"] != "DELETED")

    out: dict[str, Any] = {}
    for pattern in ("^a0$", "a", "0$", "^A0$", "a[12]", "["):
        out[f"servers name={pattern}"] = names(urlencode({"name": pattern}))
    out["servers node=^c[12]$"] = names(urlencode({"node": "^c[12]$"}))
    b0 = next(s for s in conn.compute.get("/servers/detail?all_tenants=1").json()["servers"]
              if s["name"] == "b0")
    stamp = datetime.fromisoformat(b0["updated"].replace("Z", "+00:00"))
    earlier = (stamp - timedelta(seconds=1)).isoformat()
    out["servers changes-since=b0's update"] = names(
        urlencode({"changes-since": stamp.isoformat()}))
    # With changes-since or changes-before Nova lists deleted servers too, and the real-Nova
    # backend deletes the first try of a boot it retries (on a loaded machine): names()
    # leaves deleted servers out, or a retried b0's first try would list b0 before its update.
    out["servers changes-before=b0's update - 1 s"] = names(
        urlencode({"changes-before": earlier}))
    out["servers changes-before=b0's update - 1 s (2.65)"] = names(
        urlencode({"changes-before": earlier}), "2.65")
    out["servers changes-since after changes-before"] = names(
        urlencode({"changes-since": stamp.isoformat(), "changes-before": earlier}))
    out["servers changes-since=not-a-time"] = names(
        urlencode({"changes-since": "not-a-time"}))
    return out


def _server_id(osc: Client, name: str) -> str:
    """A server's id, read through openstacksdk (the real-Nova backend has no Keystone for
    'server list' to resolve names with)."""
    conn = osc.served.connect()
    return next(s.id for s in conn.compute.servers(all_projects=True) if s.name == name)
