"""The power drivers against the fake cloud's emulated BMCs, served by a subprocess."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from consolidator.power.bmc_file import load_bmc_file
from consolidator.power.catalog import driver_for
from consolidator.power.driver import BmcConfig, PowerError
from tests.functional.served import ServedCloud, served_cloud
from tests.functional.waits import PATIENCE_S, wait_until

SCENARIO = {
    "settings": {"service_up_delay_s": 1.0, "bmc_graceful_delay_s": 0.3},
    "hosts": [
        {"name": "rf-01", "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
         "bmc": {"driver": "redfish"}},
        {"name": "ipmi-01", "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
         "bmc": {"driver": "ipmi"}},
        {"name": "plain-01", "vcpus": 8, "memory_mb": 16384, "disk_gb": 100},
    ],
    "instances": [{"name": "vm-1", "host": "plain-01", "vcpus": 1, "memory_mb": 512,
                   "disk_gb": 1}],
}
HOSTS = ["rf-01", "ipmi-01"]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCloud]:
    """One served fake cloud with a Redfish and an IPMI BMC for the whole module."""
    with served_cloud(SCENARIO, tmp_path_factory.mktemp("served"), bmc=True) as cloud:
        yield cloud


@pytest.fixture
def bmcs(served: ServedCloud) -> Iterator[dict[str, BmcConfig]]:
    """The served bmc.yaml, loaded; faults are cleared after each test."""
    assert served.bmc_yaml is not None
    try:
        yield load_bmc_file(served.bmc_yaml)
    finally:
        served.clear_faults()


def _driver(config: BmcConfig, **changes: object) -> object:
    driver = driver_for(dataclasses.replace(config, **changes))
    driver.poll_interval = 0.2  # type: ignore[attr-defined]
    return driver


def _service_state(served: ServedCloud, host: str) -> str:
    conn = served.connect()
    try:
        return next(s.state for s in conn.compute.services() if s.host == host)
    finally:
        conn.close()


def _wait_service(served: ServedCloud, host: str, state: str) -> None:
    wait_until(lambda: _service_state(served, host) == state,
               f"{host}'s nova-compute to be {state}", interval=0.2)


def test_bmc_yaml_is_private(served: ServedCloud) -> None:
    assert served.bmc_yaml is not None
    assert served.bmc_yaml.stat().st_mode & 0o077 == 0
    assert set(load_bmc_file(served.bmc_yaml)) == set(HOSTS)


@pytest.mark.parametrize("host", HOSTS)
def test_power_off_and_on_drive_nova_compute(served: ServedCloud,
                                             bmcs: dict[str, BmcConfig], host: str) -> None:
    driver = _driver(bmcs[host])
    assert driver.power_state() == "on"
    assert _service_state(served, host) == "up"

    # Graceful: the BMC's shutdown (0.3 s) ends long before the grace, so nothing is forced.
    assert driver.power_off(graceful=True, grace=PATIENCE_S, timeout=PATIENCE_S) == "off"
    assert driver.power_state() == "off"
    assert served.state()["hosts"][host]["power"] == "off"
    assert _service_state(served, host) == "down"

    assert driver.power_on(timeout=PATIENCE_S) == "on"
    _wait_service(served, host, "up")


@pytest.mark.parametrize("host", HOSTS)
def test_forced_power_off(served: ServedCloud, bmcs: dict[str, BmcConfig], host: str) -> None:
    driver = _driver(bmcs[host])
    try:
        assert driver.power_off(graceful=False, timeout=PATIENCE_S) == "off"
        assert served.state()["hosts"][host]["state"] == "down"
    finally:
        assert driver.power_on(timeout=PATIENCE_S) == "on"


@pytest.mark.parametrize("host", HOSTS)
def test_wrong_password_is_refused_fast(bmcs: dict[str, BmcConfig], host: str) -> None:
    driver = _driver(bmcs[host], password="not-the-password", timeout=10)
    with pytest.raises(PowerError, match="authentication refused") as err:
        driver.power_state()
    assert "not-the-password" not in str(err.value)
    assert "tried" not in str(err.value)  # a refused password is not retried
    assert str(err.value).startswith(f"{host}: {bmcs[host].driver} BMC ")


def test_ipmi_unknown_user_is_refused_fast(bmcs: dict[str, BmcConfig]) -> None:
    with pytest.raises(PowerError, match="authentication refused"):
        _driver(bmcs["ipmi-01"], username="nobody", timeout=10).power_state()


@pytest.mark.parametrize("host", HOSTS)
def test_bmc_auth_fails_fault(served: ServedCloud, bmcs: dict[str, BmcConfig],
                              host: str) -> None:
    driver = _driver(bmcs[host], timeout=10)
    assert driver.power_state() == "on"
    served.add_fault({"type": "bmc_auth_fails", "host": host})
    with pytest.raises(PowerError, match="authentication refused"):
        driver.power_off(graceful=False, timeout=10)
    assert served.state()["hosts"][host]["power"] == "on"
    served.clear_faults()
    assert driver.power_state() == "on"


@pytest.mark.parametrize("host", HOSTS)
def test_bmc_unreachable_fault(served: ServedCloud, bmcs: dict[str, BmcConfig],
                               host: str) -> None:
    timeout = 4.0
    driver = _driver(bmcs[host], timeout=timeout, read_attempts=2, read_backoff=0.1)
    served.add_fault({"type": "bmc_unreachable", "host": host})
    with pytest.raises(PowerError, match="does not answer") as err:
        driver.power_off(graceful=False, timeout=10)
    # A silent BMC is retried: two reads, each giving up after the timeout (IPMI: pyghmi
    # gives up after about 5 s; the watchdog allows 10 s).
    assert str(err.value).endswith("(tried 2 times)") and "\n" not in str(err.value)
    assert served.state()["hosts"][host]["power"] == "on"
    served.clear_faults()
    assert driver.power_state() == "on"


@pytest.mark.parametrize("host", HOSTS)
def test_a_busy_bmc_read_is_retried(served: ServedCloud, bmcs: dict[str, BmcConfig],
                                    host: str) -> None:
    """Two power reads answered 'node busy' (IPMI 0xC0) / HTTP 503 (Redfish), then answers.

    sushy itself re-sends a GET answered 5xx once, so for Redfish the two busy answers fail
    the first read and the second read succeeds; for IPMI the third read does.
    """
    driver = _driver(bmcs[host], timeout=10, read_attempts=3, read_backoff=0.05)
    served.add_fault({"type": "bmc_busy", "host": host, "count": 2})
    assert driver.power_state() == "on"
    assert served.state()["faults"] == []  # both busy answers were given
    served.add_fault({"type": "bmc_busy", "host": host, "count": 2})
    try:
        assert driver.power_off(graceful=False, timeout=PATIENCE_S) == "off"
        assert served.state()["hosts"][host]["power"] == "off"
    finally:
        served.clear_faults()
        assert driver.power_on(timeout=PATIENCE_S) == "on"


@pytest.mark.parametrize("host", HOSTS)
def test_a_bmc_busy_for_good_fails_in_one_line(served: ServedCloud,
                                               bmcs: dict[str, BmcConfig], host: str) -> None:
    driver = _driver(bmcs[host], timeout=10, read_attempts=2, read_backoff=0.05)
    served.add_fault({"type": "bmc_busy", "host": host})
    with pytest.raises(PowerError) as err:
        driver.power_off(graceful=False, timeout=10)
    message = str(err.value)
    assert message.startswith(f"{host}: {bmcs[host].driver} BMC ") and "\n" not in message
    assert ("Node Busy" if host == "ipmi-01" else "HTTP 503") in message
    assert message.endswith("(tried 2 times)")
    assert served.state()["hosts"][host]["power"] == "on"


def test_served_files(served: ServedCloud) -> None:
    assert Path(served.clouds_yaml).exists()
    assert served.control_url.endswith("/_fake")
