"""The fake cloud's hooks for the safety test: a user's servers come and go through the
control API (and Nova and Placement see them), and a BMC that accepts a power-off and then
stops answering (bmc_vanishes_after_off)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import requests

from consolidator.emulators.fake.cloud import FakeCloud
from consolidator.scenario.files import parse_scenario

SCENARIO = {"hosts": [{"name": h, "vcpus": 4, "memory_mb": 8192, "disk_gb": 100,
                       "bmc": {"driver": "redfish"}} for h in ("c1", "c2")],
            "instances": [{"name": "vm0", "host": "c1", "vcpus": 1, "memory_mb": 512,
                           "disk_gb": 1}]}


@pytest.fixture
def cloud() -> Iterator[FakeCloud]:
    with FakeCloud(parse_scenario(SCENARIO), bmc=True, bmc_graceful_delay_s=0.0) as served:
        yield served


def test_servers_created_and_deleted_through_the_control_api(cloud: FakeCloud) -> None:
    made = requests.post(f"{cloud.base_url}/_fake/servers", timeout=10, json={
        "name": "u1", "host": "c2", "vcpus": 2, "memory_mb": 1024, "disk_gb": 5})
    assert made.status_code == 201, made.text
    conn = cloud.connect()
    assert {s.name: s.compute_host for s in conn.compute.servers(all_projects=True)} == \
        {"vm0": "c1", "u1": "c2"}
    provider = next(conn.placement.resource_providers(name="c2"))
    usages = conn.placement.get(f"/resource_providers/{provider.id}/usages").json()["usages"]
    assert usages["VCPU"] == 2 and usages["MEMORY_MB"] == 1024
    again = requests.post(f"{cloud.base_url}/_fake/servers", timeout=10,
                          json={"name": "u1", "host": "c2"})
    assert again.status_code == 409
    assert requests.delete(f"{cloud.base_url}/_fake/servers/u1", timeout=10).status_code == 204
    assert [s.name for s in conn.compute.servers(all_projects=True)] == ["vm0"]
    assert cloud.state.hosts["c2"].used[:2] == [0, 0]
    assert requests.delete(f"{cloud.base_url}/_fake/servers/u1", timeout=10).status_code == 404


def test_a_bmc_that_vanishes_after_accepting_a_power_off(cloud: FakeCloud) -> None:
    cloud.add_fault({"type": "bmc_vanishes_after_off", "host": "c2"})
    auth = ("admin", "bmcpass")
    system = f"{cloud.base_url}/redfish/v1/Systems/c2"
    assert requests.get(system, auth=auth, timeout=10).json()["PowerState"] == "On"
    off = requests.post(f"{system}/Actions/ComputerSystem.Reset", auth=auth, timeout=10,
                        json={"ResetType": "ForceOff"})
    assert off.status_code == 204 and cloud.power("c2") == "off"
    with pytest.raises(requests.Timeout):
        requests.get(system, auth=auth, timeout=1)
    cloud.clear_faults()
    assert requests.get(system, auth=auth, timeout=10).json()["PowerState"] == "Off"
