"""The fake cloud over real HTTP, driven by the real openstacksdk."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import openstack
import pytest
import requests
import yaml
from keystoneauth1 import exceptions as ksa_exc
from openstack import exceptions as sdk_exc

from consolidator.emulators.fake.cloud import FakeCloud
from consolidator.scenario.files import Scenario, parse_scenario
from tests.functional.waits import PATIENCE_S, wait_until

#: openstacksdk warns about its own internals; that is not what these tests check.
pytestmark = pytest.mark.filterwarnings("ignore:::openstack.*")

HOST = {"vcpus": 8, "memory_mb": 16384, "disk_gb": 200, "cpu_allocation_ratio": 2.0,
        "reserved_memory_mb": 512}


def scenario_doc(extra_servers: int = 0) -> dict[str, Any]:
    """Four hosts (one small, one off), a few servers, an anti-affinity group."""
    instances = [
        {"name": "web-1", "host": "c1", "vcpus": 2, "memory_mb": 1024, "disk_gb": 20,
         "flavor": "m1.small", "flavor_extra_specs": {"hw:cpu_policy": "shared"},
         "metadata": {"consolidator:important": "true"}},
        {"name": "web-2", "host": "c2", "vcpus": 2, "memory_mb": 1024, "disk_gb": 20,
         "flavor": "m1.small", "flavor_extra_specs": {"hw:cpu_policy": "shared"}},
        {"name": "db-1", "host": "c1", "vcpus": 4, "memory_mb": 8192, "disk_gb": 40},
        {"name": "off-1", "host": "c2", "vcpus": 1, "memory_mb": 512, "disk_gb": 10,
         "status": "SHUTOFF"},
    ]
    instances += [{"name": f"vm-{i:03d}", "host": f"c{1 + i % 2}", "vcpus": 1,
                   "memory_mb": 256, "disk_gb": 1} for i in range(extra_servers)]
    return {
        "name": "test",
        "hosts": [{"name": "c1", **HOST}, {"name": "c2", **HOST},
                  {"name": "tiny", "vcpus": 2, "memory_mb": 2048, "disk_gb": 50},
                  {"name": "dark", **HOST, "power": "off"}],
        "instances": instances,
        "server_groups": [{"name": "web", "policy": "anti-affinity",
                           "members": ["web-1", "web-2"]}],
    }


def make_cloud(doc: dict[str, Any] | None = None, **kwargs: Any) -> FakeCloud:
    """A fake cloud whose migrations take a few tens of milliseconds."""
    kwargs.setdefault("migration_bandwidth_mb_s", 100_000.0)
    return FakeCloud(parse_scenario(doc or scenario_doc()), **kwargs)


@pytest.fixture
def cloud() -> Iterator[FakeCloud]:
    with make_cloud() as running:
        yield running


@pytest.fixture
def conn(cloud: FakeCloud) -> Any:
    return cloud.connect()


def wait_for(predicate: Callable[[], Any], timeout: float = PATIENCE_S) -> Any:
    """Poll until predicate() is truthy, and return it; fail after timeout."""
    return wait_until(predicate, "the fake cloud's state", timeout, interval=0.02)


def by_name(conn: Any) -> dict[str, Any]:
    return {s.name: s for s in conn.compute.servers(all_projects=True, details=True)}


# -- Keystone --------------------------------------------------------------------------


def test_password_auth_gives_a_token_far_ahead_and_a_catalog(cloud: FakeCloud) -> None:
    body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
        "name": "admin", "domain": {"name": "Default"}, "password": "secret"}}},
        "scope": {"project": {"name": "admin", "domain": {"name": "Default"}}}}}
    resp = requests.post(f"{cloud.auth_url}/auth/tokens", json=body, timeout=5)
    assert resp.status_code == 201 and resp.headers["X-Subject-Token"]
    token = resp.json()["token"]
    assert token["expires_at"] > time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time()
                                                                               + 3600 * 20))
    assert {e["type"] for e in token["catalog"]} >= {"compute", "placement"}
    assert [r["name"] for r in token["roles"]][0] == "admin"
    body["auth"]["identity"]["password"]["user"]["password"] = "wrong"
    assert requests.post(f"{cloud.auth_url}/auth/tokens", json=body,
                         timeout=5).status_code == 401


def test_the_sdk_authenticates_and_a_wrong_password_is_unauthorized(cloud: FakeCloud) -> None:
    assert cloud.connect().compute.get_endpoint_data().max_microversion == (2, 96)
    with pytest.raises(ksa_exc.Unauthorized):
        list(cloud.connect(password="wrong").compute.servers())


def test_requests_without_a_token_are_refused(cloud: FakeCloud) -> None:
    assert requests.get(f"{cloud.compute_url}/servers", timeout=5).status_code == 401
    resp = requests.get(f"{cloud.placement_url}/resource_providers",
                        headers={"X-Auth-Token": "forged"}, timeout=5)
    assert resp.status_code == 401 and resp.json()["errors"][0]["status"] == 401


def test_without_placement_the_catalog_has_no_placement() -> None:
    with make_cloud(placement=False) as cloud:
        conn = cloud.connect()
        catalog = conn.session.auth.get_access(conn.session).service_catalog
        assert catalog.get_endpoints(service_type="placement") == {}
        assert list(conn.compute.servers(all_projects=True))


# -- Nova: versions, servers, paging ---------------------------------------------------


def test_nova_version_documents_and_microversion_headers(cloud: FakeCloud) -> None:
    doc = requests.get(f"{cloud.compute_url}", timeout=5).json()["version"]
    assert (doc["id"], doc["status"], doc["version"], doc["min_version"]) == (
        "v2.1", "CURRENT", "2.96", "2.1")
    assert doc["links"][0]["href"].startswith(cloud.base_url)
    conn = cloud.connect()
    resp = conn.compute.get("/servers/detail?all_tenants=1", microversion="2.47")
    assert resp.headers["OpenStack-API-Version"] == "compute 2.47"
    assert resp.headers["X-OpenStack-Nova-API-Version"] == "2.47"
    too_new = conn.compute.get("/servers", microversion="2.97", raise_exc=False)
    assert too_new.status_code == 406 and "maximum is 2.96" in too_new.text


def test_servers_carry_host_flavor_and_state_at_the_negotiated_version(
        cloud: FakeCloud, conn: Any) -> None:
    servers = by_name(conn)
    assert set(servers) == {"web-1", "web-2", "db-1", "off-1"}
    web = servers["web-1"]
    assert (web.compute_host, web.hypervisor_hostname) == ("c1", "c1")
    assert (web.flavor.vcpus, web.flavor.ram, web.flavor.disk) == (2, 1024, 20)
    assert web.flavor.original_name == "m1.small"
    assert web.flavor.extra_specs == {"hw:cpu_policy": "shared"}
    assert web.metadata == {"consolidator:important": "true"}
    assert (servers["off-1"].status, servers["off-1"].vm_state) == ("SHUTOFF", "stopped")
    assert servers["db-1"].flavor.original_name == "c4-m8192-d40"
    listed = cloud.requests("/compute/v2.1/servers/detail")
    assert listed[-1]["microversion"] == "2.96"   # the SDK's Server cap is above our max
    assert listed[-1]["query"]["all_tenants"] == ["True"]
    one = conn.compute.get_server(web.id)
    assert one.compute_host == "c1" and one.flavor.vcpus == 2


def test_before_2_47_the_flavor_is_a_reference(cloud: FakeCloud) -> None:
    conn = cloud.connect(compute_api_version="2.46")
    server = next(s for s in conn.compute.servers(all_projects=True) if s.name == "db-1")
    raw = conn.compute.get(f"/servers/{server.id}", microversion="2.46").json()
    assert set(raw["server"]["flavor"]) == {"id", "links"}
    flavor = conn.compute.get_flavor(server.flavor.id)
    assert (flavor.vcpus, flavor.ram, flavor.name) == (4, 8192, "c4-m8192-d40")


def test_paging_follows_next_links_across_pages() -> None:
    with make_cloud(scenario_doc(extra_servers=21)) as cloud:
        conn = cloud.connect()
        names = [s.name for s in conn.compute.servers(all_projects=True, details=True,
                                                      limit=10)]
        assert len(names) == len(set(names)) == 25
        pages = cloud.requests("/compute/v2.1/servers/detail")
        # 10 + 10 + 5; the SDK asks once more after a short page when it was given a limit
        assert len(pages) in (3, 4) and "marker" not in pages[0]["query"]
        assert all(p["query"]["marker"] and p["query"]["limit"] == ["10"] for p in pages[1:])
        raw = conn.compute.get("/servers/detail?all_tenants=True&limit=5").json()
        assert raw["servers_links"][0]["rel"] == "next"
        assert raw["servers_links"][0]["href"].startswith(cloud.compute_url)


def test_the_host_filter_lists_only_that_hosts_servers(conn: Any) -> None:
    resp = conn.compute.get("/servers/detail?all_tenants=True&host=c2").json()
    assert sorted(s["name"] for s in resp["servers"]) == ["off-1", "web-2"]
    assert all(s["OS-EXT-SRV-ATTR:host"] == "c2" for s in resp["servers"])


def test_flavors_server_groups_and_zones(conn: Any) -> None:
    flavors = {f.name: f for f in conn.compute.flavors()}
    assert flavors["m1.small"].extra_specs == {"hw:cpu_policy": "shared"}
    assert flavors["m1.small"].is_public
    groups = list(conn.compute.server_groups(all_projects=True))
    servers = by_name(conn)
    assert groups[0].policy == "anti-affinity"
    assert sorted(groups[0].member_ids) == sorted([servers["web-1"].id, servers["web-2"].id])
    zones = conn.compute.get("/os-availability-zone/detail").json()["availabilityZoneInfo"]
    assert "c1" in next(z for z in zones if z["zoneName"] == "nova")["hosts"]


def test_aggregates_list_compute_hosts_and_a_uuid_from_2_41() -> None:
    doc = scenario_doc()
    doc["hosts"][0].update(compute_host="cn-1", aggregates=["gpu", "rack-1"])
    doc["hosts"][1]["aggregates"] = ["rack-1"]
    with make_cloud(doc) as cloud:
        conn = cloud.connect()
        sdk = {a.name: a for a in conn.compute.aggregates()}
        old = conn.compute.get("/os-aggregates", microversion="2.40").json()["aggregates"]
    assert set(sdk) == {"gpu", "rack-1"}
    assert sdk["gpu"].hosts == ["cn-1"] and sdk["rack-1"].hosts == ["cn-1", "c2"]
    assert sdk["gpu"].uuid and sdk["gpu"].metadata == {}
    assert sdk["gpu"].availability_zone is None
    assert [a["id"] for a in old] == [1, 2] and not any("uuid" in a for a in old)
    assert {"name", "hosts", "metadata", "created_at", "deleted"} <= set(old[0])


# -- hypervisors, Placement, services, power -------------------------------------------


def test_hypervisors_at_2_88_have_placement_ids_and_no_capacity(conn: Any) -> None:
    hypervisors = {h.name: h for h in conn.compute.hypervisors(details=True)}
    providers = {p.name: p.id for p in conn.placement.resource_providers()}
    assert set(hypervisors) == set(providers) == {"c1", "c2", "tiny", "dark"}
    for name, hyp in hypervisors.items():
        assert hyp.id == providers[name]
    assert hypervisors["dark"].state == "down"
    raw = conn.compute.get("/os-hypervisors/detail", microversion="2.88").json()
    assert not {"vcpus", "memory_mb", "local_gb", "vcpus_used", "running_vms"} & set(
        raw["hypervisors"][0])
    old = conn.compute.get("/os-hypervisors/detail", microversion="2.52").json()
    c1 = next(h for h in old["hypervisors"] if h["hypervisor_hostname"] == "c1")
    assert isinstance(c1["id"], int)
    assert (c1["vcpus"], c1["vcpus_used"], c1["running_vms"]) == (8, 6, 2)


def test_placement_inventories_and_usages_match_the_scenario(conn: Any) -> None:
    rp = next(conn.placement.resource_providers(name="c1"))
    inventories = {i.resource_class: i for i in conn.placement.resource_provider_inventories(rp)}
    assert (inventories["VCPU"].total, inventories["VCPU"].allocation_ratio) == (8, 2.0)
    assert (inventories["MEMORY_MB"].total, inventories["MEMORY_MB"].reserved) == (16384, 512)
    assert inventories["DISK_GB"].total == 200
    usages = conn.placement.get(f"/resource_providers/{rp.id}/usages").json()["usages"]
    assert usages == {"VCPU": 6, "MEMORY_MB": 9216, "DISK_GB": 60}


def test_disabling_a_service_shows_in_the_service_list(conn: Any) -> None:
    service = next(conn.compute.services(binary="nova-compute", host="c2"))
    conn.compute.disable_service(service, host="c2", binary="nova-compute",
                                 disabled_reason="consolidator plan 7")
    again = next(conn.compute.services(binary="nova-compute", host="c2"))
    assert (again.status, again.disabled_reason) == ("disabled", "consolidator plan 7")
    conn.compute.enable_service(again, host="c2", binary="nova-compute")
    assert next(conn.compute.services(host="c2")).status == "enabled"


def test_disabling_before_2_53_uses_the_host_and_binary(cloud: FakeCloud) -> None:
    conn = cloud.connect(compute_api_version="2.52")
    service = next(conn.compute.services(binary="nova-compute", host="c1"))
    conn.compute.disable_service(service, host="c1", binary="nova-compute",
                                 disabled_reason="old cloud")
    assert cloud.cluster().hosts[0].disabled_reason == "old cloud"


def test_power_off_takes_the_compute_service_down(cloud: FakeCloud, conn: Any) -> None:
    cloud.set_power("c2", False)
    assert cloud.power("c2") == "off"
    assert next(conn.compute.services(host="c2")).state == "down"
    cloud.set_power("c2", True)
    assert next(conn.compute.services(host="c2")).state == "up"


def test_power_on_brings_the_service_up_after_the_delay() -> None:
    with make_cloud(service_up_delay_s=0.3) as cloud:
        conn = cloud.connect()
        assert next(conn.compute.services(host="dark")).state == "down"
        resp = requests.post(f"{cloud.base_url}/_fake/power/dark", json={"on": True},
                             timeout=5)
        assert resp.json() == {"host": "dark", "power": "on"}
        assert next(conn.compute.services(host="dark")).state == "down"
        wait_for(lambda: next(conn.compute.services(host="dark")).state == "up")


# -- live migration --------------------------------------------------------------------


def _migrations(conn: Any, server: Any) -> list[Any]:
    return list(conn.compute.migrations(server_id=server.id))


def test_live_migration_goes_migrating_then_active_on_the_destination() -> None:
    with make_cloud(migration_bandwidth_mb_s=8192.0) as cloud:   # 1 GB: 0.125 s
        conn = cloud.connect()
        server = by_name(conn)["web-1"]
        conn.compute.live_migrate_server(server, host="tiny", block_migration="auto")
        assert conn.compute.get_server(server.id).status == "MIGRATING"
        assert cloud.requests("*/action")[-1]["microversion"] == "2.30"
        wait_for(lambda: conn.compute.get_server(server.id).status == "ACTIVE")
        assert conn.compute.get_server(server.id).compute_host == "tiny"
        (record,) = _migrations(conn, server)
        assert (record.status, record.migration_type) == ("completed", "live-migration")
        assert (record.source_compute, record.dest_compute) == ("c1", "tiny")
        rp = next(conn.placement.resource_providers(name="tiny"))
        usages = conn.placement.get(f"/resource_providers/{rp.id}/usages").json()
        assert usages["usages"]["MEMORY_MB"] == 1024
        assert cloud.server_host("web-1") == "tiny"


def test_the_migrations_of_a_deleted_server_are_still_listed() -> None:
    """Found by the randomized safety test (seed 7): once a server that had migrated was
    deleted, every GET /os-migrations (by host too) answered HTTP 500 (KeyError), so each
    later drain and apply failed on the fake cloud alone. Nova keeps the record."""
    with make_cloud(migration_bandwidth_mb_s=8192.0) as cloud:
        conn = cloud.connect()
        server = by_name(conn)["web-1"]
        conn.compute.live_migrate_server(server, host="tiny", block_migration="auto")
        wait_for(lambda: conn.compute.get_server(server.id).status == "ACTIVE")
        assert requests.delete(f"{cloud.base_url}/_fake/servers/web-1",
                               timeout=10).status_code == 204
        (record,) = _migrations(conn, server)
        assert (record.status, record.source_compute, record.dest_compute) == (
            "completed", "c1", "tiny")
        by_host = list(conn.compute.migrations(host="tiny"))
        assert [m.id for m in by_host] == [record.id]


@pytest.mark.parametrize(("name", "dest"), [("db-1", "tiny"), ("web-1", "c2")],
                         ids=["full-host", "anti-affinity"])
def test_a_migration_the_scheduler_refuses_ends_in_error(conn: Any, name: str,
                                                         dest: str) -> None:
    server = by_name(conn)[name]
    conn.compute.live_migrate_server(server, host=dest, block_migration="auto")
    wait_for(lambda: _migrations(conn, server)[0].status == "error")
    fresh = conn.compute.get_server(server.id)
    assert (fresh.status, fresh.compute_host) == ("ACTIVE", "c1")


@pytest.mark.parametrize(("name", "host", "error"), [
    ("off-1", "c1", sdk_exc.ConflictException),
    ("db-1", "nowhere", sdk_exc.BadRequestException),
    ("db-1", "c1", sdk_exc.BadRequestException),
])
def test_the_api_refuses_impossible_migrations_at_once(conn: Any, name: str, host: str,
                                                       error: type) -> None:
    with pytest.raises(error):
        conn.compute.live_migrate_server(by_name(conn)[name], host=host,
                                         block_migration="auto")


def test_an_unknown_server_is_404(conn: Any) -> None:
    with pytest.raises(sdk_exc.NotFoundException):
        conn.compute.get_server("00000000-0000-0000-0000-000000000000")


# -- faults ----------------------------------------------------------------------------


def test_a_failing_migration_ends_in_error_with_the_server_active_on_its_source(
        cloud: FakeCloud, conn: Any) -> None:
    cloud.add_fault({"type": "migration_fails", "instance": "db-1"})
    server = by_name(conn)["db-1"]
    conn.compute.live_migrate_server(server, host="c2", block_migration="auto")
    wait_for(lambda: _migrations(conn, server)[0].status == "error")
    fresh = conn.compute.get_server(server.id)
    assert (fresh.status, fresh.compute_host) == ("ACTIVE", "c1")
    assert cloud.server_status("db-1") == "ACTIVE"


def test_a_hanging_migration_stays_running(cloud: FakeCloud, conn: Any) -> None:
    cloud.add_fault({"type": "migration_hangs", "instance": "db-1"})
    server = by_name(conn)["db-1"]
    conn.compute.live_migrate_server(server, host="c2", block_migration="auto")
    wait_for(lambda: [m.status for m in conn.compute.server_migrations(server)] == ["running"])
    assert conn.compute.get_server(server.id).status == "MIGRATING"
    (running,) = conn.compute.server_migrations(server)
    assert running.status == "running" and running.dest_compute == "c2"


def test_a_409_on_the_action_raises_conflict_once(cloud: FakeCloud, conn: Any) -> None:
    cloud.add_fault({"type": "http_error", "method": "POST",
                     "path": "/compute/v2.1/servers/*/action", "status": 409, "count": 1})
    server = by_name(conn)["db-1"]
    with pytest.raises(sdk_exc.ConflictException):
        conn.compute.live_migrate_server(server, host="c2", block_migration="auto")
    conn.compute.live_migrate_server(server, host="c2", block_migration="auto")
    wait_for(lambda: cloud.server_host("db-1") == "c2")


@pytest.mark.parametrize("status", [500, 503])
def test_a_5xx_on_a_list_raises_until_the_count_is_spent(cloud: FakeCloud, conn: Any,
                                                         status: int) -> None:
    resp = requests.post(f"{cloud.base_url}/_fake/faults", timeout=5, json={
        "type": "http_error", "method": "GET", "path": "/compute/v2.1/servers/detail",
        "status": status, "count": 2})
    assert resp.status_code == 201
    for _ in range(2):
        with pytest.raises(sdk_exc.HttpException) as err:
            list(conn.compute.servers(all_projects=True))
        assert err.value.status_code == status
    raw = conn.compute.get("/servers/detail")
    assert raw.status_code == 200


def test_an_error_body_is_novas(cloud: FakeCloud, conn: Any) -> None:
    cloud.add_fault({"type": "http_error", "path": "/compute/v2.1/os-services",
                     "status": 503, "retry_after": 1})
    resp = conn.compute.get("/os-services")
    assert resp.status_code == 503 and resp.headers["Retry-After"] == "1"
    assert resp.json() == {"serviceUnavailable": {"code": 503,
                                                  "message": "Injected fault: HTTP 503"}}
    cloud.clear_faults()
    assert conn.compute.get("/os-services").status_code == 200


def test_a_slow_fault_delays_the_response(cloud: FakeCloud, conn: Any) -> None:
    list(conn.compute.servers(all_projects=True))
    cloud.add_fault({"type": "slow", "path": "/compute/v2.1/servers/detail", "seconds": 0.3})
    started = time.monotonic()
    list(conn.compute.servers(all_projects=True))
    assert time.monotonic() - started >= 0.3


def test_faults_from_the_scenario_file_apply(tmp_path: Path) -> None:
    doc = scenario_doc()
    doc["faults"] = [{"type": "migration_fails", "instance": "web-1"}]
    doc["settings"] = {"password": "from-scenario"}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(doc))
    with FakeCloud(path, migration_bandwidth_mb_s=1e6) as cloud:
        assert cloud.cloud_config()["auth"]["password"] == "from-scenario"
        state = requests.get(f"{cloud.base_url}/_fake/state", timeout=5).json()
        assert state["faults"][0]["instance"] == "web-1"
        conn = cloud.connect()
        server = by_name(conn)["web-1"]
        conn.compute.live_migrate_server(server, host="tiny", block_migration="auto")
        wait_for(lambda: _migrations(conn, server)[0].status == "error")


def test_the_cluster_view_reflects_the_live_state(cloud: FakeCloud) -> None:
    cluster = cloud.cluster()
    assert isinstance(cluster.hosts[0].id, str)
    dark = cluster.hosts[cluster.host_index["dark"]]
    assert (dark.power, dark.state) == ("off", "down")
    assert isinstance(cloud.scenario, Scenario)


# -- the command line ------------------------------------------------------------------


def test_fake_cloud_serve_writes_clouds_yaml_and_stops_on_sigterm(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(scenario_doc()))
    clouds = tmp_path / "clouds.yaml"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "consolidator", "fake-cloud", "serve", "--scenario",
         str(scenario), "--write-clouds-yaml", str(clouds), "--cloud-name", "demo"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path)
    try:
        wait_for(clouds.exists)
        env_sdk = {"OS_CLIENT_CONFIG_FILE": str(clouds)}
        old = {k: os.environ.get(k) for k in env_sdk}
        os.environ.update(env_sdk)
        try:
            conn = openstack.connect(cloud="demo")
            assert len(list(conn.compute.servers(all_projects=True))) == 4
            operator = openstack.connect(cloud="demo-operator")   # a persona beside it
            assert set(operator.session.auth.get_access(operator.session).role_names) == {
                "member", "reader"}
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=PATIENCE_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=PATIENCE_S)
    assert proc.returncode == 0, err
    assert "auth URL http://127.0.0.1:" in out and "demo:" in out
    assert "demo-reader:" in out and "demo-operator:" in out and "demo-admin:" in out


def test_fake_cloud_serve_rejects_a_bad_scenario_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("hosts: 3\n")
    proc = subprocess.run([sys.executable, "-m", "consolidator", "fake-cloud", "serve",
                           "--scenario", str(bad)], capture_output=True, text=True,
                          timeout=PATIENCE_S, cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().count("\n") == 0 and "hosts" in proc.stderr


def test_a_graceful_shutdown_held_by_a_fault_ends_once_it_is_cleared() -> None:
    """bmc_shutdown_held keeps a host on through its graceful shutdown, for as long as a test
    needs to look at it; cleared, the host powers off. A power-on ends the shutdown."""
    doc = {"hosts": [{"name": h, "vcpus": 4, "memory_mb": 4096, "disk_gb": 40,
                      "bmc": {"driver": "redfish"}} for h in ("c1", "c2")], "instances": []}
    with make_cloud(doc, bmc=True, bmc_graceful_delay_s=0.05) as cloud:
        assert cloud.bmcs is not None
        power = cloud.bmcs.power
        for host in ("c1", "c2"):
            cloud.add_fault({"type": "bmc_shutdown_held", "host": host})
            power.graceful_off(host)
        time.sleep(0.5)                  # ten times the delay: held, not merely slow
        assert (cloud.power("c1"), cloud.power("c2")) == ("on", "on")
        power.on("c2")                   # ends c2's shutdown
        cloud.clear_faults()
        wait_until(lambda: cloud.power("c1") == "off", "c1's shutdown to finish")
        time.sleep(0.5)
        assert cloud.power("c2") == "on"


def test_a_migration_that_lands_elsewhere_ends_on_another_valid_host() -> None:
    doc = scenario_doc()
    doc["hosts"].append({"name": "c3", **HOST})
    with make_cloud(doc) as cloud:
        conn = cloud.connect()
        cloud.add_fault({"type": "migration_lands_elsewhere", "instance": "db-1"})
        told: list[tuple[str, str | None]] = []
        cloud.state.observers.append(lambda moment, mig: told.append((moment, mig.dest)))
        server = by_name(conn)["db-1"]
        conn.compute.live_migrate_server(server, host="c2", block_migration="auto")
        wait_for(lambda: conn.compute.get_server(server.id).status == "ACTIVE")
        assert cloud.server_host("db-1") == "c3"      # the only other host with room
        assert told == [("requested", "c2"), ("started", "c3")]
        (record,) = _migrations(conn, server)
        assert (record.status, record.dest_compute) == ("completed", "c3")


def test_a_migration_that_lands_elsewhere_goes_where_asked_when_nothing_else_fits(
        cloud: FakeCloud, conn: Any) -> None:
    cloud.add_fault({"type": "migration_lands_elsewhere", "instance": "db-1"})
    server = by_name(conn)["db-1"]
    conn.compute.live_migrate_server(server, host="c2", block_migration="auto")
    wait_for(lambda: conn.compute.get_server(server.id).status == "ACTIVE")
    assert cloud.server_host("db-1") == "c2"


def _boot(cloud: FakeCloud, conn: Any, name: str, microversion: str, **where: str) -> Any:
    flavor = next(f for f in conn.compute.flavors() if f.name == "m1.small")
    body = {"server": {"name": name, "flavorRef": flavor.id, "imageRef": "cirros",
                       "networks": "none", **where}}
    return requests.post(f"{cloud.compute_url}/servers", json=body, timeout=5, headers={
        "X-Auth-Token": conn.session.get_token(),
        "OpenStack-API-Version": f"compute {microversion}"})


def test_a_boot_onto_a_forced_host_lands_there_even_when_it_is_disabled(
        cloud: FakeCloud, conn: Any) -> None:
    service = next(s for s in conn.compute.services() if s.host == "c2")
    conn.compute.disable_service(service, host="c2", binary="nova-compute",
                                 disabled_reason="maintenance")
    resp = _boot(cloud, conn, "forced-1", "2.74", availability_zone="nova:c2")
    assert resp.status_code == 202, resp.text
    assert cloud.server_host("forced-1") == "c2"
    assert cloud.server_status("forced-1") == "ACTIVE"
    assert by_name(conn)["forced-1"].compute_host == "c2"


def test_a_boot_with_host_is_checked_by_the_scheduler(cloud: FakeCloud, conn: Any) -> None:
    service = next(s for s in conn.compute.services() if s.host == "c2")
    conn.compute.disable_service(service, host="c2", binary="nova-compute",
                                 disabled_reason="maintenance")
    refused = _boot(cloud, conn, "asked-1", "2.74", host="c2")
    assert refused.status_code == 400 and "disabled" in refused.text
    assert _boot(cloud, conn, "asked-2", "2.73", host="c1").status_code == 400
    assert _boot(cloud, conn, "asked-3", "2.74", host="c1").status_code == 202
    assert cloud.server_host("asked-3") == "c1"
    assert _boot(cloud, conn, "nowhere-1", "2.74", availability_zone="nova:dark"
                 ).status_code == 400       # powered off: its nova-compute is down
    assert "asked-1" not in by_name(conn) and "nowhere-1" not in by_name(conn)


@pytest.mark.parametrize("fault", [False, True], ids=["cancelled", "not-cancelled"])
def test_a_power_on_during_a_graceful_shutdown_cancels_it_unless_a_fault_says_not(
        fault: bool) -> None:
    with make_cloud(bmc=True, bmc_graceful_delay_s=0.3) as cloud:
        assert cloud.bmcs is not None
        if fault:
            cloud.add_fault({"type": "bmc_shutdown_not_cancelled", "host": "c1"})
        cloud.bmcs.power.graceful_off("c1")
        assert cloud.bmcs.power.shutting_down() == ["c1"]
        cloud.bmcs.power.on("c1")
        if fault:      # the OS is going down: the host still ends off
            wait_for(lambda: cloud.power("c1") == "off")
        else:
            assert cloud.bmcs.power.shutting_down() == []
            assert cloud.power("c1") == "on"
