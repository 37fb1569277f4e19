"""Power readings (IPMI DCMI, Redfish Power and EnvironmentMetrics) from the emulated BMCs of a
served fake cloud: they follow the host's load and configured watts, and fall back to None."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from consolidator.power.bmc_file import load_bmc_file
from consolidator.power.catalog import driver_for
from consolidator.power.driver import BmcConfig, read_watts
from tests.functional.served import ServedCloud, served_cloud
from tests.functional.waits import wait_until

IDLE, PEAK = 100.0, 300.0
HOST = {"vcpus": 8, "memory_mb": 16384, "disk_gb": 100, "idle_watts": IDLE,
        "peak_watts": PEAK}
SCENARIO = {
    "settings": {"service_up_delay_s": 0.5, "bmc_graceful_delay_s": 0.1},
    "hosts": [
        {"name": "rf-busy", **HOST, "bmc": {"driver": "redfish"}},
        {"name": "rf-env", **HOST, "bmc": {"driver": "redfish", "meter": "environment_metrics"}},
        {"name": "ipmi-busy", **HOST, "bmc": {"driver": "ipmi"}},
        {"name": "ipmi-idle", **HOST, "bmc": {"driver": "ipmi"}},
        {"name": "rf-off", **HOST, "power": "off", "bmc": {"driver": "redfish"}},
        {"name": "ipmi-off", **HOST, "power": "off", "bmc": {"driver": "ipmi"}},
    ],
    "instances": [
        {"name": f"vm-{host}", "host": host, "vcpus": 4, "memory_mb": 1024, "disk_gb": 1}
        for host in ("rf-busy", "rf-env", "ipmi-busy")],
}
#: Half of 8 cores allocated: idle + (peak - idle) / 2.
HALF_LOAD = IDLE + (PEAK - IDLE) / 2


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCloud]:
    """One served fake cloud with Redfish and IPMI BMCs."""
    with served_cloud(SCENARIO, tmp_path_factory.mktemp("served"), bmc=True) as cloud:
        yield cloud


@pytest.fixture
def bmcs(served: ServedCloud) -> Iterator[dict[str, BmcConfig]]:
    """The served bmc.yaml, with one read attempt; faults cleared after each test."""
    assert served.bmc_yaml is not None
    try:
        yield {h: dataclasses.replace(c, read_attempts=1, timeout=3.0)
               for h, c in load_bmc_file(served.bmc_yaml).items()}
    finally:
        served.clear_faults()


@pytest.mark.parametrize("host, watts", [("rf-busy", HALF_LOAD), ("rf-env", HALF_LOAD),
                                         ("ipmi-busy", HALF_LOAD), ("ipmi-idle", IDLE)])
def test_reading_follows_load(bmcs: dict[str, BmcConfig], host: str, watts: float) -> None:
    assert driver_for(bmcs[host]).power_watts() == pytest.approx(watts, abs=1)


@pytest.mark.parametrize("host", ["rf-off", "ipmi-off"])
def test_powered_off_host_has_no_reading(bmcs: dict[str, BmcConfig], host: str) -> None:
    assert driver_for(bmcs[host]).power_watts() is None


def move(served: ServedCloud, name: str, host: str) -> None:
    """Live-migrate a server and wait until Nova says it is on host and ACTIVE."""
    conn = served.connect()
    try:
        server = conn.compute.find_server(name, ignore_missing=False)
        conn.compute.live_migrate_server(server, host=host, block_migration="auto")
        wait_until(lambda: (lambda s: (s.compute_host, s.status) == (host, "ACTIVE"))(
            conn.compute.get_server(server.id)), f"{name} to land on {host}")
    finally:
        conn.close()


def test_reading_rises_when_load_arrives(served: ServedCloud,
                                         bmcs: dict[str, BmcConfig]) -> None:
    """vm-ipmi-busy moves to ipmi-idle, and back afterwards: the module's other tests read
    the hosts as the scenario has them, in whatever order they run."""
    driver = driver_for(bmcs["ipmi-idle"])
    before = driver.power_watts()
    move(served, "vm-ipmi-busy", "ipmi-idle")
    try:
        assert before == pytest.approx(IDLE, abs=1)
        assert driver.power_watts() == pytest.approx(HALF_LOAD, abs=1)
    finally:
        move(served, "vm-ipmi-busy", "ipmi-busy")


@pytest.mark.parametrize("host", ["rf-busy", "ipmi-busy"])
def test_bmc_without_a_meter_gives_none(served: ServedCloud, bmcs: dict[str, BmcConfig],
                                        host: str) -> None:
    served.add_fault({"type": "bmc_no_power_reading", "host": host})
    assert driver_for(bmcs[host]).power_watts() is None


@pytest.mark.parametrize("host", ["rf-busy", "ipmi-busy"])
def test_failing_bmc_reads_as_none(served: ServedCloud, bmcs: dict[str, BmcConfig],
                                   host: str) -> None:
    served.add_fault({"type": "bmc_auth_fails", "host": host})
    assert read_watts(driver_for(bmcs[host])) is None
