"""python-openstackclient with osc-placement against the fake cloud: the answers the real Nova
gave on the same scenario (tests/realnova/test_openstack_client.py compares them live), and
the Keystone projects, limits and usage that only the fake can answer through the client
(the real-Nova backend has no Keystone)."""

from __future__ import annotations

from pathlib import Path

from tests.functional.osc_answers import (
    HYPERVISOR_USED,
    Client,
    answers,
    migrate_b0,
    scenario,
)
from tests.functional.served import served_cloud

#: What the real Nova and Placement answered (nova 34.0.0, placement 16.0.0), written out by
#: tests/realnova/test_openstack_client.py.
REAL = {
    "aggregate list": [("az-east", "east"), ("freepool", None)],
    "hypervisor show c1 (2.87)": {
        "hypervisor_hostname": "c1", "state": "up", "status": "enabled", "service_host": "c1",
        "aggregates": ["az-east"], "vcpus": 8, "memory_mb": 16384, "local_gb": 200,
        "uptime": "42 days,  3:14", "users": "0", "load_average": "0.10, 0.20, 0.30",
        "host_time": "12:00:00"},
    "server event list b0": ["live-migration", "create"],
    "server event show b0 (live-migration)": [
        ("compute_check_can_live_migrate_destination", "Success", "c4"),
        ("compute_check_can_live_migrate_source", "Success", "c2"),
        ("compute_live_migration", "Success", "c2"),
        ("compute_post_live_migration_at_destination", "Success", "c4"),
        ("compute_pre_live_migration", "Success", "c4"),
        ("conductor_migrate_server", "Success", None)],
    "resource provider list --resource VCPU=1": ["c1", "c2", "c3", "c4"],
    "resource provider list --resource VCPU=8": ["c1", "c2", "c3", "c4"],
    "resource provider list --resource VCPU=12": [],
    "resource provider list --required COMPUTE_NODE": ["c1", "c2", "c3", "c4"],
    "resource provider list --required CUSTOM_MAINT": ["c2"],
    "resource provider list --member-of az-east": ["c1", "c2"],
    "resource provider list --member-of freepool": ["c4"],
    "allocation candidate list --resource VCPU=1 (1.10)": [
        ("c1", "VCPU=1", "VCPU=3/16"), ("c2", "VCPU=1", "VCPU=0/16"),
        ("c3", "VCPU=1", "VCPU=1/16"), ("c4", "VCPU=1", "VCPU=1/16")],
    "allocation candidate list --resource VCPU=1 (1.17)": [
        ("c1", "VCPU=1", "VCPU=3/16"), ("c2", "VCPU=1", "VCPU=0/16"),
        ("c3", "VCPU=1", "VCPU=1/16"), ("c4", "VCPU=1", "VCPU=1/16")],
    "resource provider allocation show b0": [
        ("c4", '{"DISK_GB": 10, "MEMORY_MB": 1024, "VCPU": 1}')],
    "resource provider aggregate list c1 (1.19)": ["az-east"],
    "resource provider aggregate list c4 (1.19)": ["freepool"],
    "resource class list": [
        "VCPU", "MEMORY_MB", "DISK_GB", "PCI_DEVICE", "SRIOV_NET_VF", "NUMA_SOCKET",
        "NUMA_CORE", "NUMA_THREAD", "NUMA_MEMORY_MB", "IPV4_ADDRESS", "VGPU",
        "VGPU_DISPLAY_HEAD", "NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC", "PCPU",
        "MEM_ENCRYPTION_CONTEXT", "FPGA", "PGPU", "NET_PACKET_RATE_KILOPACKET_PER_SEC",
        "NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC", "NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC"],
    "trait list --name startswith:CUSTOM_": ["CUSTOM_MAINT"],
    "GET /limits (absolute)": {
        "maxTotalCores": -1, "maxPersonality": 5, "maxPersonalitySize": 10240,
        "maxTotalInstances": -1, "maxTotalKeypairs": 100, "maxServerMeta": 128,
        "maxImageMeta": 128, "maxTotalRAMSize": -1, "maxServerGroups": -1,
        "maxServerGroupMembers": -1, "maxTotalFloatingIps": -1, "maxSecurityGroups": -1,
        "maxSecurityGroupRules": -1, "totalRAMUsed": 5120, "totalCoresUsed": 5,
        "totalInstancesUsed": 5, "totalFloatingIpsUsed": 0, "totalSecurityGroupsUsed": 0,
        "totalServerGroupsUsed": 0},
    "GET /os-simple-tenant-usage (servers)": [
        (name, 1, 1024, 10, "active", "c1-m1024-d10") for name in ("a0", "a1", "a2", "b0",
                                                                  "d0")],
}


def test_the_fake_answers_as_the_real_nova_did(tmp_path: Path) -> None:
    with served_cloud(scenario(), tmp_path) as served:
        osc = Client(served)
        migrate_b0(osc)
        got = answers(osc)
        differ = {q: (got.get(q), real) for q, real in REAL.items() if got.get(q) != real}
        assert not differ
        shown = osc("--os-compute-api-version", "2.87", "hypervisor", "show", "c1")
        assert [shown[k] for k in HYPERVISOR_USED] == [3, 30, 3]   # the scenario's a0-a2
        projects = {p["Name"] for p in osc("project", "list")}
        assert "admin" in projects
        limits = {row["Name"]: row["Value"] for row in osc("limits", "show", "--absolute")}
        assert (limits["instances_used"], limits["total_cores_used"]) == (5, 5)
        usage = osc("usage", "list")
        assert sorted(s["name"] for row in usage for s in row["Servers"]) == \
            ["a0", "a1", "a2", "b0", "d0"]
