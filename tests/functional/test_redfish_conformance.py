"""The redfish driver against sushy-tools' emulator (fake driver): a peer we did not write."""

from __future__ import annotations

import logging
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest

from consolidator.emulators.fake.process import stop_child
from consolidator.power.catalog import driver_for
from consolidator.power.driver import BmcConfig, PowerError
from tests.functional.waits import PATIENCE_S

SYSTEM_UUID = "27946b59-9e44-4fa7-8e91-f3527a1ef094"
USERNAME, PASSWORD = "admin", "redfish-secret"
START_TIMEOUT_S = PATIENCE_S
#: sushy-tools applies a power change after a random 1-11 s.
CHANGE_TIMEOUT_S = 30.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _write_config(tmp_path: Path) -> Path:
    htpasswd = tmp_path / "htpasswd"
    digest = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    htpasswd.write_text(f"{USERNAME}:{digest}\n")
    config = tmp_path / "emulator.conf"
    systems = [{"uuid": SYSTEM_UUID, "name": "conformance-01", "power_state": "On",
                "external_notifier": False, "nics": []}]
    config.write_text(
        "SUSHY_EMULATOR_FAKE_DRIVER = True\n"
        f"SUSHY_EMULATOR_FAKE_SYSTEMS = {systems!r}\n"
        f"SUSHY_EMULATOR_STATE_DIR = {str(tmp_path / 'state')!r}\n"
        f"SUSHY_EMULATOR_AUTH_FILE = {str(htpasswd)!r}\n")
    return config


@pytest.fixture
def emulator(tmp_path: Path) -> Iterator[str]:
    """sushy-emulator on 127.0.0.1 with a fresh state dir; yields its base URL."""
    binary = Path(sys.executable).with_name("sushy-emulator")
    port = _free_port()
    log = tmp_path / "emulator.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [str(binary), "--config", str(_write_config(tmp_path)), "-i", "127.0.0.1",
             "-p", str(port)], stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with urllib.request.urlopen(url + "/redfish/v1/", timeout=2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"sushy-emulator did not start:\n{log.read_text()}") from None
                time.sleep(0.1)
        yield url
    finally:
        stop_child(process)


def _config(url: str, password: str = PASSWORD, system_id: str | None = None) -> BmcConfig:
    """The emulator serves plain http on 127.0.0.1, so the config must allow it."""
    return BmcConfig(host="conformance-01", driver="redfish", address=url, port=None,
                     username=USERNAME, password=password, timeout=10,
                     options={"verify_tls": True, "system_id": system_id,
                              "allow_insecure_http": True})


def test_power_off_then_on_with_polling(emulator: str) -> None:
    driver = driver_for(_config(emulator))
    driver.poll_interval = 0.5  # type: ignore[attr-defined]
    assert driver.power_state() == "on"
    # each change is confirmed by polling within its timeout (the driver raises past it)
    assert driver.power_off(graceful=True, grace=CHANGE_TIMEOUT_S,
                            timeout=CHANGE_TIMEOUT_S) == "off"
    assert driver.power_state() == "off"
    assert driver.power_on(timeout=CHANGE_TIMEOUT_S) == "on"
    assert driver.power_state() == "on"


def test_explicit_system_id(emulator: str) -> None:
    driver = driver_for(_config(emulator, system_id=f"/redfish/v1/Systems/{SYSTEM_UUID}"))
    assert driver.power_state() == "on"


def test_wrong_password(emulator: str, caplog: pytest.LogCaptureFixture) -> None:
    driver = driver_for(_config(emulator, password="wrong-password"))
    caplog.set_level(logging.INFO, logger="consolidator.power")
    with pytest.raises(PowerError, match="authentication refused") as err:
        driver.power_state()
    # refused at once: a wrong password is never retried (what "fails fast" means here,
    # whatever the machine's speed)
    assert "retrying" not in caplog.text and "tried" not in str(err.value)
    assert "wrong-password" not in str(err.value)


def test_closed_port_fails_fast() -> None:
    config = _config(f"http://127.0.0.1:{_free_port()}")
    driver = driver_for(config)
    with pytest.raises(PowerError, match="does not answer") as err:
        driver.power_state()
    # bounded by the configured tries, not by a wait (the refused connection is not hung on)
    tries = config.read_attempts
    assert (f"tried {tries} times" in str(err.value)) == (tries > 1), str(err.value)


def test_the_system_identity_is_read_and_checked_before_a_power_action(emulator: str
                                                                      ) -> None:
    """The ComputerSystem's UUID as sushy-tools reports it; an entry expecting another
    system's refuses to power it, and sends no Reset."""
    driver = driver_for(_config(emulator))
    assert driver.identity()["uuid"] == SYSTEM_UUID
    right = BmcConfig(**{**vars(_config(emulator)), "options": {
        "allow_insecure_http": True, "system_uuid": SYSTEM_UUID.upper()}})
    assert driver_for(right).expected_identity() == {"uuid": SYSTEM_UUID.upper()}
    wrong = BmcConfig(**{**vars(_config(emulator)), "options": {
        "allow_insecure_http": True, "system_uuid": "00000000-0000-4000-8000-000000000001"}})
    with pytest.raises(PowerError, match="expects its system uuid"):
        driver_for(wrong).power_off(timeout=5)
    assert driver.power_state() == "on"
