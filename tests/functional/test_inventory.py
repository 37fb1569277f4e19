"""The inventory through the real openstacksdk against the fake cloud over HTTP."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from consolidator.app.config import Config
from consolidator.app.context import AppContext
from consolidator.app.snapshots import record_snapshot
from consolidator.core.errors import CloudError
from consolidator.emulators.fake.cloud import FakeCloud
from consolidator.openstack.connection import connect
from consolidator.openstack.inventory import FallbackRatios, read_inventory
from consolidator.scenario.files import parse_scenario
from consolidator.store.db import make_engine
from consolidator.store.snapshots import list_snapshots, load_snapshot
from tests.functional.cli import run


def scenario_doc(hosts: int = 6, per_host: int = 7) -> dict:
    """A small cloud that uses every field of the scenario contract."""
    doc: dict = {"name": "small", "hosts": [], "instances": []}
    for n in range(1, hosts + 1):
        host = {"name": f"node-{n}", "vcpus": 16 + 8 * (n % 3), "memory_mb": 65536 * n,
                "disk_gb": 500 + n, "cpu_allocation_ratio": [1.0, 4.0, 16.0][n % 3],
                "ram_allocation_ratio": 1.0 + (n % 2) * 0.5, "disk_allocation_ratio": 1.0,
                "reserved_vcpus": n % 2, "reserved_memory_mb": 512 * (n % 3),
                "reserved_disk_gb": n, "availability_zone": "az1" if n <= hosts // 2 else "az2"}
        aggregates = (["gpu-hosts"] if n % 2 else []) + (["rack-a"] if n <= 3 else [])
        if aggregates:
            host["aggregates"] = aggregates
        if n == 2:
            host["status"] = "disabled"
            host["disabled_reason"] = "maintenance"
        doc["hosts"].append(host)
    for h in range(1, hosts + 1):
        for k in range(per_host):
            inst = {"name": f"vm-{h}-{k}", "host": f"node-{h}", "vcpus": 1 + k % 4,
                    "memory_mb": 1024 * (1 + k % 3), "disk_gb": 10 * (1 + k % 2),
                    "project_id": f"project-{k % 3}", "flavor": f"f{1 + k % 4}.{k % 3}.{k % 2}"}
            if k == 0:
                inst["status"] = "SHUTOFF"
            if k % 3 == 1:
                inst["metadata"] = {"consolidator:important": "false", "role": "batch"}
            doc["instances"].append(inst)
    doc["server_groups"] = [
        {"name": "web", "policy": "anti-affinity", "members": ["vm-1-1", "vm-3-1", "vm-4-1"]},
        {"name": "db", "policy": "affinity", "members": ["vm-5-2", "vm-5-3"]},
        {"name": "soft", "policy": "soft-anti-affinity", "members": [f"vm-{hosts}-1"]},
    ]
    return doc


def fake(doc: dict | None = None, **kw: object) -> FakeCloud:
    return FakeCloud(parse_scenario(doc or scenario_doc()), **kw)


def by_key(items: object, key: str) -> dict:
    return {getattr(i, key): i for i in items}  # type: ignore[attr-defined]


HOST_FIELDS = ("vcpus", "memory_mb", "disk_gb", "cpu_allocation_ratio", "ram_allocation_ratio",
               "disk_allocation_ratio", "reserved_vcpus", "reserved_memory_mb",
               "reserved_disk_gb", "availability_zone", "status", "state", "disabled_reason",
               "aggregates")
INSTANCE_FIELDS = ("name", "host", "vcpus", "memory_mb", "disk_gb", "status", "metadata",
                   "project_id", "flavor")


def _as_nova_shows(host: object, field: str) -> object:
    """A scenario host's field as Nova shows it: an availability zone other than nova is an
    aggregate az-NAME with that zone's metadata, as the fake and the real Nova make it."""
    value = getattr(host, field)
    zone = host.availability_zone  # type: ignore[attr-defined]
    if field == "aggregates" and zone != "nova":
        return tuple(sorted({*value, f"az-{zone}"}))
    return value


def assert_same_cloud(read: object, expected: object) -> None:
    got_hosts, want_hosts = by_key(read.hosts, "name"), by_key(expected.hosts, "name")
    assert got_hosts.keys() == want_hosts.keys()
    for name, want in want_hosts.items():
        got = got_hosts[name]
        for f in HOST_FIELDS:
            assert getattr(got, f) == _as_nova_shows(want, f), (name, f)
        assert got.capacity == want.capacity
        assert got.power == ("on" if want.power == "on" else "unknown")
    got_inst, want_inst = by_key(read.instances, "id"), by_key(expected.instances, "id")
    assert got_inst.keys() == want_inst.keys()
    for iid, want in want_inst.items():
        for f in INSTANCE_FIELDS:
            assert getattr(got_inst[iid], f) == getattr(want, f), (want.name, f)
    got_groups = {g.name: (g.policy, set(g.members)) for g in read.server_groups}
    assert got_groups == {g.name: (g.policy, set(g.members)) for g in expected.server_groups}


@pytest.mark.parametrize("microversion", ["2.96", "2.60", "2.40"])
def test_snapshot_equals_the_scenario(microversion: str) -> None:
    expected = parse_scenario(scenario_doc()).cluster
    with fake(max_microversion=microversion) as cloud:
        inventory = read_inventory(cloud.connect())
    assert inventory.capacity_source == "placement"
    assert inventory.microversion == microversion
    assert_same_cloud(inventory.cluster, expected)


def test_aggregates_are_read_in_one_request_by_compute_host() -> None:
    with fake(max_microversion="2.96") as cloud:
        inventory = read_inventory(cloud.connect())
        served = cloud.requests("/compute/v2.1/os-aggregates", "GET")
    assert len(served) == 1
    hosts = by_key(inventory.cluster.hosts, "name")
    # az-az1 is zone az1's aggregate: an availability zone is one in Nova
    assert hosts["node-1"].aggregates == ("az-az1", "gpu-hosts", "rack-a")
    assert hosts["node-2"].aggregates == _as_nova_shows(hosts["node-2"], "aggregates")
    assert "rack-a" in hosts["node-2"].aggregates
    assert hosts["node-6"].aggregates == ("az-az2",)
    assert not any("aggregates" in n for n in inventory.notes)


@pytest.mark.parametrize("status", [403, 404])
def test_unreadable_aggregates_give_none_and_a_note(status: int) -> None:
    with fake() as cloud:
        cloud.add_fault({"type": "http_error", "method": "GET",
                         "path": "/compute/v2.1/os-aggregates", "status": status})
        inventory = read_inventory(cloud.connect())
    assert all(h.aggregates == () for h in inventory.cluster.hosts)
    assert any(f"host aggregates are not readable (HTTP {status}" in n
               for n in inventory.notes)
    assert len(inventory.cluster.instances) == 42


def test_paging_reads_every_page() -> None:
    doc = scenario_doc(hosts=5, per_host=9)
    with fake(doc) as cloud:
        small_pages = read_inventory(cloud.connect(), page_size=4)
        pages = cloud.requests("/compute/v2.1/servers/detail", "GET")
        one_page = read_inventory(cloud.connect(), page_size=1000)
    assert len(pages) == 12  # 45 servers at 4 a page: 11 full pages and a short last one
    assert sum("marker" in p["query"] for p in pages) == 11
    assert len(small_pages.cluster.instances) == 45
    assert small_pages.cluster == one_page.cluster


def test_catalog_without_placement_falls_back_to_hypervisors() -> None:
    expected = parse_scenario(scenario_doc()).cluster
    with fake(placement=False) as cloud:
        inventory = read_inventory(cloud.connect(), ratios=FallbackRatios(2.0, 1.0, 1.0))
    assert inventory.capacity_source == "hypervisor"
    assert any("placement is not in the catalog" in n for n in inventory.notes)
    host = by_key(inventory.cluster.hosts, "name")["node-1"]
    want = by_key(expected.hosts, "name")["node-1"]
    assert (host.vcpus, host.memory_mb, host.disk_gb) == (want.vcpus, want.memory_mb,
                                                          want.disk_gb)
    assert host.cpu_allocation_ratio == 2.0
    assert_same_cloud_instances = by_key(inventory.cluster.instances, "id")
    assert assert_same_cloud_instances.keys() == by_key(expected.instances, "id").keys()


def test_transient_5xx_is_retried_and_recovers() -> None:
    with fake() as cloud:
        cloud.add_fault({"type": "http_error", "method": "GET",
                         "path": "/compute/v2.1/servers/detail", "status": 503, "count": 2})
        inventory = read_inventory(cloud.connect())
    assert len(inventory.cluster.instances) == 42


def test_persistent_5xx_is_one_line_naming_cloud_and_cause() -> None:
    with fake() as cloud:
        cloud.add_fault({"type": "http_error", "method": "GET",
                         "path": "/compute/v2.1/servers/detail", "status": 500})
        with pytest.raises(CloudError) as info:
            read_inventory(cloud.connect())
    message = str(info.value)
    assert "listing servers failed after retries" in message and "500" in message
    assert "\n" not in message


def test_wrong_password_is_one_line() -> None:
    with fake() as cloud, pytest.raises(CloudError, match="authentication failed"):
        read_inventory(cloud.connect(auth={**cloud.cloud_config()["auth"],
                                           "password": "wrong"}))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_unreachable_auth_url_is_one_line(tmp_path: Path) -> None:
    with fake() as cloud:
        config = cloud.cloud_config()
    config["auth"]["auth_url"] = f"http://127.0.0.1:{free_port()}/identity/v3"
    with pytest.raises(CloudError, match="cannot"):
        read_inventory(connect(None, load_yaml_config=False, load_envvars=False, **config))


def test_failed_read_stores_nothing(db_url: str) -> None:
    engine = make_engine(db_url)
    with fake() as cloud:
        cloud.add_fault({"type": "http_error", "method": "GET",
                         "path": "/compute/v2.1/servers/detail", "status": 500})
        ctx = AppContext.of(config=Config(), engine=engine, connect=cloud.connect)
        with pytest.raises(CloudError):
            record_snapshot(ctx)
        assert list_snapshots(engine) == []
        cloud.clear_faults()
        snapshot, inventory = record_snapshot(ctx)
    assert load_snapshot(engine, snapshot.info.id).cluster == inventory.cluster


def test_snapshot_command_against_served_cloud(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    clouds = tmp_path / "clouds.yaml"
    with fake() as cloud:
        cloud.write_clouds_yaml(clouds, name="lab")
        env = {"OS_CLIENT_CONFIG_FILE": str(clouds)}
        result = run("--cloud", "lab", "snapshot", db_url=db_url, env=env)
        assert result.code == 0, result.err
        assert "read 6 hosts, 42 instances" in result.err
        shown = json.loads(run("snapshots", "show", result.out.strip(), "--format", "json",
                               db_url=db_url).out)
        assert shown["cloud"] == "lab" and shown["capacity_source"] == "placement"
        assert len(shown["instances"]) == 42
        unknown = run("--cloud", "nowhere", "snapshot", db_url=db_url, env=env)
        assert unknown.code == 1 and "nowhere" in unknown.err
        assert len(unknown.err.strip().splitlines()) == 1


def test_auth_type_none_with_endpoint_overrides(tmp_path: Path) -> None:
    """A cloud without Keystone: clouds.yaml with auth_type none and endpoint overrides."""
    expected = parse_scenario(scenario_doc()).cluster
    with fake(noauth=True) as cloud:
        clouds = cloud.write_clouds_yaml(tmp_path / "clouds.yaml", name="bare")
        assert "auth_type: none" in clouds.read_text()
        inventory = read_inventory(cloud.connect())
        assert not cloud.requests("/identity/*")
    assert inventory.capacity_source == "placement"
    assert_same_cloud(inventory.cluster, expected)


def test_a_snapshot_right_after_a_power_off_does_not_stall(tmp_path: Path) -> None:
    """Issue 17, defect 3: from 2.88 os-hypervisors/detail asks every compute for its uptime
    over RPC; a compute just powered off but not yet marked down makes it fail (500
    MessagingTimeout, after the RPC timeout in production). The inventory reads the detail at
    2.87 at most, so a snapshot then makes the same requests as a normal one: none fails,
    none is retried, none waits for an RPC timeout. (What that costs in time on this machine:
    tools/bench/snapshot_after_power_off.py; issue 45 made this test count, not time.)"""
    with fake(service_down_delay_s=60.0) as cloud:
        normal = read_inventory(cloud.connect())
        normal_calls = [(r["method"], r["path"]) for r in cloud.requests("/compute/*")]
        cloud.set_power("node-6", False)
        assert next(s for s in cloud.connect().compute.services()
                    if s.host == "node-6").state == "up"     # Nova has not noticed yet
        before = len(cloud.requests("/compute/*"))
        after = read_inventory(cloud.connect())
        after_calls = cloud.requests("/compute/*")[before:]
        detail = cloud.requests("/compute/v2.1/os-hypervisors/detail", "GET")
    assert [r for r in after_calls if r["status"] >= 500] == []
    assert sorted((r["method"], r["path"]) for r in after_calls) == sorted(normal_calls)
    assert detail and all(tuple(map(int, r["microversion"].split("."))) <= (2, 87)
                          for r in detail)
    assert len(after.cluster.hosts) == len(normal.cluster.hosts)
