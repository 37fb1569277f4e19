"""The operator's whole flow on the real Nova and Placement: snapshot, plan, approve, apply,
rollback and a daemon cycle. Every check reads Nova's own view, never our store."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.realnova.operator import Baseline, Operator, baseline, operator_for, restored
from tests.realnova.served import NovaView, served_nova

#: Hosts c1..c5, alternately IPMI and Redfish; populations 5, 4, 3, 2, 1.
POPULATION = {"c1": 5, "c2": 4, "c3": 3, "c4": 2, "c5": 1}


def scenario() -> dict:
    """Five hosts, fifteen servers, an anti-affinity pair, metadata and a reserved amount."""
    hosts = [{"name": h, "vcpus": 16, "memory_mb": 32768, "disk_gb": 500,
              "cpu_allocation_ratio": 4.0, "reserved_memory_mb": 512 * n,
              "bmc": {"driver": "ipmi" if n % 2 else "redfish"}}
             for n, h in enumerate(POPULATION, start=1)]
    instances = [{"name": f"vm-{h}-{k}", "host": h, "vcpus": 1 + k % 2,
                  "memory_mb": 1024 * (1 + k % 2), "disk_gb": 10, "flavor": f"f{k % 2}",
                  "metadata": {"consolidator:important": "false"} if k == 0 else {}}
                 for h, n in POPULATION.items() for k in range(n)]
    groups = [{"name": "web", "policy": "anti-affinity", "members": ["vm-c1-0", "vm-c4-0"]}]
    return {"hosts": hosts, "instances": instances, "server_groups": groups}


@pytest.fixture(scope="module")
def served_flow(tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[tuple[Operator, NovaView, Baseline]]:
    """One cloud for the module (fifteen servers take a while to boot)."""
    tmp = tmp_path_factory.mktemp("realnova-flow")
    with served_nova(scenario(), tmp) as served:
        op = operator_for(served, tmp, auto_apply=True)
        # The daemon cycle follows the rollback within a minute: no [power] min_on_time
        # cool-down, or it would keep the hosts the rollback powered on.
        with op.config.open("a") as config:
            config.write("\n[power]\nmin_on_time = 0\n")
        nova = NovaView(served)
        yield op, nova, baseline(op, nova)


@pytest.fixture
def cloud(served_flow: tuple[Operator, NovaView, Baseline]
          ) -> Iterator[tuple[Operator, NovaView]]:
    """The module's cloud, put back as it was after each test: any order works."""
    op, nova, start = served_flow
    with restored(op, nova, start):
        yield op, nova


def test_snapshot_equals_nova_and_placement(cloud: tuple[Operator, NovaView]) -> None:
    op, nova = cloud
    snap_id = op.ok("snapshot").out.strip()
    snap = json.loads(op.ok("snapshots", "show", snap_id, "--format", "json").out)
    servers = nova.servers()
    assert {i["name"]: i["host"] for i in snap["instances"]} == \
        {n: s.compute_host for n, s in servers.items()}
    assert {i["name"]: i["id"] for i in snap["instances"]} == \
        {n: s.id for n, s in servers.items()}
    for inst in snap["instances"]:
        flavor = servers[inst["name"]].flavor
        assert (inst["vcpus"], inst["memory_mb"], inst["disk_gb"]) == \
            (flavor["vcpus"], flavor["ram"], flavor["disk"])
        assert inst["metadata"] == servers[inst["name"]].metadata
        assert inst["status"] == servers[inst["name"]].status
    providers = {rp.name: rp for rp in nova.conn.placement.resource_providers()}
    assert {h["name"] for h in snap["hosts"]} == set(providers)
    for host in snap["hosts"]:
        inv = {i.resource_class: i for i in
               nova.conn.placement.resource_provider_inventories(providers[host["name"]])}
        assert host["id"] == providers[host["name"]].id
        assert (host["vcpus"], host["reserved_vcpus"], host["cpu_allocation_ratio"]) == \
            (inv["VCPU"].total, inv["VCPU"].reserved, inv["VCPU"].allocation_ratio)
        assert (host["memory_mb"], host["reserved_memory_mb"],
                host["ram_allocation_ratio"]) == (inv["MEMORY_MB"].total,
                                                  inv["MEMORY_MB"].reserved,
                                                  inv["MEMORY_MB"].allocation_ratio)
        assert host["disk_gb"] == inv["DISK_GB"].total
        service = nova.services()[host["compute_host"]]
        assert (host["status"], host["state"]) == (service.status, service.state)
    # The scenario's reserved memory reached Placement through the driver.
    assert {h["name"]: h["reserved_memory_mb"] for h in snap["hosts"]}["c3"] == 1536
    groups = {g.name: g for g in nova.conn.compute.server_groups(all_projects=True)}
    ids = {s.id: n for n, s in servers.items()}
    assert [(g["name"], g["policy"], sorted(g["members"])) for g in snap["server_groups"]] == \
        [("web", "anti-affinity", sorted(ids[m] for m in groups["web"].member_ids))]


def test_plan_approve_apply_rollback(cloud: tuple[Operator, NovaView]) -> None:
    op, nova = cloud
    snap_id = op.ok("snapshot").out.strip()
    before = nova.where()
    plan = op.plan("zoned-bestfit")
    assert plan["power_off"] and plan["migrations"], plan
    shown = json.loads(op.ok("plan", "show", plan["id"], "--format", "json").out)
    assert shown["status"] == "approved"

    applied = op("apply", plan["id"])
    assert applied.code == 0, applied.out + applied.err
    servers = nova.servers()
    for move in plan["migrations"]:
        server = servers[move["instance_name"]]
        assert (server.compute_host, server.status) == (move["destination"], "ACTIVE")
        records = nova.migrations(server.id)
        assert records and records[0].status == "completed"
        assert (records[0].source_compute, records[0].dest_compute) == \
            (move["source"], move["destination"])
    services = nova.services()
    power = nova.power()
    for host in plan["power_off"]:
        assert not [n for n, s in servers.items() if s.compute_host == host]
        assert services[host].status == "disabled"
        assert plan["id"] in (services[host].disabled_reason or "")
        assert power[host] == "off"
    usages = nova.usages()
    for host in plan["power_off"]:
        assert not any(usages[host].values()), usages[host]
    # A powered-off host's nova-compute stopped: Nova reports it down, as after a power cut.
    nova.wait(lambda: all(nova.services()[h].state == "down" for h in plan["power_off"]),
              "the powered-off hosts' nova-compute to be reported down")

    back = op("rollback", snap_id, "--yes")
    assert back.code == 0, back.out + back.err
    assert nova.where() == before
    assert set(nova.statuses().values()) == {"ACTIVE"}
    services = nova.services()
    assert {h: (s.status, s.state) for h, s in services.items()} == \
        {h: ("enabled", "up") for h in POPULATION}
    assert set(nova.power().values()) == {"on"}


def test_daemon_once(cloud: tuple[Operator, NovaView]) -> None:
    op, nova = cloud
    before = nova.where()
    result = op("daemon", "--once")
    assert result.code == 0, result.out + result.err
    assert "cycle done" in result.out
    after = nova.where()
    power, services = nova.power(), nova.services()
    off = {h for h, p in power.items() if p == "off"}
    assert off, result.out  # auto_apply: the cycle consolidated the cloud
    assert not {h for h in after.values() if h in off}
    assert set(nova.statuses().values()) == {"ACTIVE"}
    assert all(services[h].status == "disabled" for h in off)
    assert sorted(after) == sorted(before)
