"""python-openstackclient with osc-placement against the fake cloud: the answers the real Nova
gave on the same scenario (tests/realnova/test_openstack_client.py checks that the real Nova
still gives them), and
the Keystone projects, limits and usage that only the fake can answer through the client
(the real-Nova backend has no Keystone)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.functional.osc_answers import (
    HYPERVISOR_USED,
    Client,
    answers,
    migrate_b0,
    scenario,
)
from tests.functional.served import served_cloud

pytestmark = pytest.mark.slow

#: The quotas at 2.57 (the real-Nova backend's: unlimited cores, instances, RAM and groups).
QUOTAS_257 = {"cores": -1, "instances": -1, "key_pairs": 100, "metadata_items": 128, "ram": -1,
              "server_group_members": -1, "server_groups": -1}
#: What the real Nova and Placement answered (nova 34.0.0, placement 16.0.0); checked against
#: them by tests/realnova/test_openstack_client.py (which writes its answers.json).
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
    # issue 34: the APIs Nova keeps below a microversion, quotas, filters, heartbeats
    "hypervisor stats show": {"count": 4, "vcpus": 32, "memory_mb": 65536, "local_gb": 800},
    "GET /os-hypervisors/statistics (2.87)": 200,
    "GET /os-hypervisors/statistics (2.88)": 404,
    "GET /os-hosts (2.42)": 200,
    "GET /os-hosts (2.43)": 404,
    "GET /os-hosts": [("CONTROLLER", "conductor", "internal"),
                      ("CONTROLLER", "scheduler", "internal"), ("c1", "compute", "east"),
                      ("c2", "compute", "east"), ("c3", "compute", "nova"),
                      ("c4", "compute", "nova")],
    "GET /os-hosts/c1": [("(total)", 8, 200), ("(used_max)", 3, 30), ("PROJECT", 3, 30)],
    "GET /os-hosts/controller": 404,
    "GET /os-quota-sets/PROJECT (2.1)": {
        "cores": -1, "fixed_ips": -1, "floating_ips": -1, "injected_file_content_bytes": 10240,
        "injected_file_path_bytes": 255, "injected_files": 5, "instances": -1,
        "key_pairs": 100, "metadata_items": 128, "ram": -1, "security_group_rules": -1,
        "security_groups": -1, "server_group_members": -1, "server_groups": -1},
    "GET /os-quota-sets/PROJECT (2.36)": {
        "cores": -1, "injected_file_content_bytes": 10240, "injected_file_path_bytes": 255,
        "injected_files": 5, "instances": -1, "key_pairs": 100, "metadata_items": 128,
        "ram": -1, "server_group_members": -1, "server_groups": -1},
    "GET /os-quota-sets/PROJECT (2.57)": QUOTAS_257,
    "GET /os-quota-sets/PROJECT/defaults (2.57)": QUOTAS_257,
    "GET /os-quota-sets/PROJECT/detail (2.57)": {
        key: {"limit": limit, "in_use": {"cores": 5, "instances": 5, "ram": 5120}.get(key, 0),
              "reserved": 0} for key, limit in QUOTAS_257.items()},
    "os-services: control services updated since b0's migration": [
        ("nova-conductor", True), ("nova-scheduler", True)],
    "servers name=^a0$": ["a0"],
    "servers name=a": ["a0", "a1", "a2"],
    "servers name=0$": ["a0", "b0", "d0"],
    "servers name=^A0$": [],
    "servers name=a[12]": ["a1", "a2"],
    "servers name=[": 400,
    "servers node=^c[12]$": ["a0", "a1", "a2"],
    "servers changes-since=b0's update": ["b0"],
    "servers changes-before=b0's update - 1 s": ["a0", "a1", "a2", "d0"],
    "servers changes-before=b0's update - 1 s (2.65)": ["a0", "a1", "a2", "b0", "d0"],
    "servers changes-since after changes-before": 400,
    "servers changes-since=not-a-time": 400,
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


def test_the_openstack_commands_issue_34_found_wrong(tmp_path: Path) -> None:
    """Through the client itself: 'hypervisor stats show' and 'host list|show' (which ask
    at 2.1), 'quota show', 'server list --name' as a regular expression, --changes-since
    and --changes-before, and the scheduler's and conductor's heartbeats in 'compute service
    list'."""
    with served_cloud(scenario(), tmp_path) as served:
        osc = Client(served)
        started = osc("compute", "service", "list")
        migrate_b0(osc)
        stats = osc("hypervisor", "stats", "show")
        assert (stats["count"], stats["vcpus_used"], stats["running_vms"],
                stats["local_gb_used"]) == (4, 5, 5, 50)
        hosts = osc("host", "list")
        assert sorted((h["Host Name"], h["Service"], h["Zone"]) for h in hosts
                      if h["Service"] == "compute") == [
            ("c1", "compute", "east"), ("c2", "compute", "east"), ("c3", "compute", "nova"),
            ("c4", "compute", "nova")]
        assert {h["Service"] for h in hosts} == {"compute", "conductor", "scheduler"}
        shown = osc("host", "show", "c1")
        assert [(r["Project"], r["CPU"]) for r in shown][:3] == [
            ("(total)", 8), ("(used_now)", 3), ("(used_max)", 3)]
        quotas = {row["Resource"]: row["Limit"] for row in osc("quota", "show")}
        assert (quotas["instances"], quotas["cores"], quotas["key-pairs"],
                quotas["injected-files"]) == (-1, -1, 100, 5)
        assert [s["Name"] for s in osc("server", "list", "--name", "^a0$")] == ["a0"]
        assert sorted(s["Name"] for s in osc("server", "list", "--name", "a")) == \
            ["a0", "a1", "a2"]
        b0 = osc("server", "show", "b0")["updated"]
        assert [s["Name"] for s in osc("server", "list", "--changes-since", b0)] == ["b0"]
        assert "b0" not in {s["Name"] for s in osc("--os-compute-api-version", "2.66",
                                                    "server", "list", "--changes-before",
                                                    "2026-06-01T00:00:00Z")}
        later = osc("compute", "service", "list")
        control = {s["Binary"]: s["Updated At"] for s in later
                   if s["Binary"] in ("nova-scheduler", "nova-conductor")}
        assert len(control) == 2
        for row in started:
            if row["Binary"] in control:
                assert control[row["Binary"]] > row["Updated At"], row
