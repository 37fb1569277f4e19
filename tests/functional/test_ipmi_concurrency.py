"""The emulated IPMI BMCs keep answering one client that talks to several of them at once.

One process talking to many BMCs is what the product does (a snapshot reads every BMC, an
apply powers several hosts off): pyghmi then shares one UDP socket, so every BMC sees the
same client address. pyghmi's server forgot that client's sessions with every BMC whenever
it logged in to one again, and a packet still queued for one of them raised in the thread
serving all BMCs: from then on none answered ("no reply to the session login").

pyghmi's I/O thread also blocked in a read of one BMC's socket when an answer was sent
between its switch to non-blocking and the read: no BMC answered until that one got a packet
(for good once its last client was done). Before pyghmi_io, 12 BMCs read 30 times each
failed about one run in three.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from consolidator.power.bmc_file import load_bmc_file
from consolidator.power.catalog import driver_for
from consolidator.power.driver import BmcConfig, PowerError
from tests.functional.served import ServedCloud, served_cloud
from tests.functional.waits import PATIENCE_S

HOSTS = [f"ipmi-{i:02d}" for i in range(1, 13)]
SCENARIO = {
    "hosts": [{"name": name, "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
               "bmc": {"driver": "ipmi"}} for name in HOSTS],
    "instances": [],
}
ROUNDS = 30


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedCloud]:
    """One served fake cloud with twelve IPMI BMCs."""
    with served_cloud(SCENARIO, tmp_path_factory.mktemp("served"), bmc=True) as cloud:
        yield cloud


def _configs(served: ServedCloud) -> dict[str, BmcConfig]:
    """The served bmc.yaml with retries off: every read must be answered the first time."""
    assert served.bmc_yaml is not None
    return {host: dataclasses.replace(config, read_attempts=1)
            for host, config in load_bmc_file(served.bmc_yaml).items()}


def _read_concurrently(configs: dict[str, BmcConfig], rounds: int) -> tuple[int, list[str]]:
    """One thread per BMC, each reading its power state `rounds` times (a fresh session
    each time, as the driver does); the reads answered and the failures."""
    answered: list[str] = []
    failures: list[str] = []

    def reads(config: BmcConfig) -> None:
        driver = driver_for(config)
        for i in range(rounds):
            try:
                answered.append(driver.power_state())
            except PowerError as exc:
                failures.append(f"read {i + 1}: {exc}")

    threads = [threading.Thread(target=reads, args=(config,)) for config in configs.values()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(answered), failures


def test_concurrent_sessions_to_every_bmc_are_all_answered(served: ServedCloud) -> None:
    configs = _configs(served)
    assert sorted(configs) == HOSTS
    answered, failures = _read_concurrently(configs, ROUNDS)
    assert failures == []
    assert answered == len(HOSTS) * ROUNDS
    assert served.process.poll() is None


def test_every_bmc_still_answers_afterwards(served: ServedCloud) -> None:
    """After the concurrent logins, each BMC still answers a lone client, and the power
    it reports is the fake cloud's."""
    configs = _configs(served)
    _read_concurrently(configs, 3)
    power = {host: rec["power"] for host, rec in served.state()["hosts"].items()}
    for host, config in configs.items():
        assert driver_for(config).power_state() == power[host]


def test_log_has_no_traceback(served: ServedCloud) -> None:
    """The thread serving the BMCs raised nothing (it logs, and keeps serving, if it does)."""
    _read_concurrently(_configs(served), 3)
    log = Path(served.clouds_yaml).with_name("served.log").read_text()
    assert "Traceback" not in log


def test_a_power_request_whose_login_got_no_answer_is_sent_on_a_fresh_login(
        served: ServedCloud) -> None:
    """The BMC leaves one whole login unanswered (pyghmi sends 4 login requests before it
    gives up): the driver logs in again and the power request goes through, once."""
    host = HOSTS[0]
    config = dataclasses.replace(_configs(served)[host], read_attempts=2, read_backoff=0)
    driver = driver_for(config)
    assert driver.power_state() == "on"
    served.add_fault({"type": "bmc_drops_logins", "host": host, "count": 4})
    try:
        driver._request("off")  # type: ignore[attr-defined]  # the request alone, no read
        assert served.state()["hosts"][host]["power"] == "off"
        assert served.state()["faults"] == []  # the first login used every dropped request
    finally:
        served.clear_faults()
        driver.power_on(timeout=PATIENCE_S)


def test_a_power_request_is_not_retried_without_attempts_left(served: ServedCloud) -> None:
    """With read_attempts 1, the unanswered login fails the request in one line."""
    host = HOSTS[1]
    config = dataclasses.replace(_configs(served)[host], read_attempts=1)
    served.add_fault({"type": "bmc_drops_logins", "host": host, "count": 4})
    try:
        with pytest.raises(PowerError, match="no reply to the session login"):
            driver_for(config)._request("off")  # type: ignore[attr-defined]
        assert served.state()["hosts"][host]["power"] == "on"
    finally:
        served.clear_faults()
