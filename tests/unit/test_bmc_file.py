"""bmc.yaml loading: defaults, password files, one-line errors, the permission warning."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from consolidator.errors import ConfigError
from consolidator.power.base import BmcConfig, PowerError, driver_for, load_bmc_file

SECRET = "s3cr3t-do-not-print"


def _write(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "bmc.yaml"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_defaults_merge_and_host_overrides(tmp_path: Path) -> None:
    path = _write(tmp_path, f"""
defaults: {{username: admin, password: {SECRET}, verify_tls: false}}
hosts:
  compute-01: {{driver: ipmi, address: 10.0.0.11, port: 623}}
  compute-02: {{driver: redfish, address: https://10.0.0.12, username: root,
               password: other, verify_tls: true, system_id: /redfish/v1/Systems/1,
               timeout: 5}}
""")
    bmcs = load_bmc_file(path)
    one, two = bmcs["compute-01"], bmcs["compute-02"]
    assert (one.driver, one.address, one.port, one.username, one.password,
            one.verify_tls, one.system_id, one.timeout) == (
        "ipmi", "10.0.0.11", 623, "admin", SECRET, False, None, 30.0)
    assert (two.username, two.password, two.verify_tls, two.system_id, two.port,
            two.timeout) == ("root", "other", True, "/redfish/v1/Systems/1", None, 5.0)


def test_password_file_relative_to_the_bmc_file(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "c1").write_text(SECRET + "\n")
    path = _write(tmp_path, """
defaults: {username: admin, password_file: secrets/c1}
hosts:
  compute-01: {driver: ipmi, address: 10.0.0.11}
  compute-02: {driver: ipmi, address: 10.0.0.12, password: inline}
""")
    bmcs = load_bmc_file(path)
    assert bmcs["compute-01"].password == SECRET
    assert bmcs["compute-02"].password == "inline"


@pytest.mark.parametrize(("text", "words"), [
    ("hosts: {c1: {address: a, username: u, password: p}}", ["'c1'", "driver"]),
    ("hosts: {c1: {driver: ipmi, username: u, password: p}}", ["'c1'", "address"]),
    ("hosts: {c1: {driver: snmp, address: a, username: u, password: p}}",
     ["'c1'", "snmp", "ipmi, redfish"]),
    ("hosts: {c1: {driver: ipmi, address: a, username: u}}", ["'c1'", "password"]),
    ("hosts: {c1: {driver: ipmi, address: a, username: u, password: p, prot: 1}}",
     ["'c1'", "'prot'"]),
    ("hosts: {c1: {driver: ipmi, address: a, username: u, password: p, port: x}}",
     ["'c1'", "port"]),
    ("hosts: {c1: {driver: ipmi, address: a, username: u, password_file: /nonexistent/x}}",
     ["'c1'", "password_file", "/nonexistent/x"]),
    ("hosts: [c1]", ["hosts"]),
    ("hosts: {c1: {driver: ipmi\n", ["line"]),
    ("host: {}", ["hosts"]),
])
def test_errors_name_file_host_and_key(tmp_path: Path, text: str, words: list[str]) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_bmc_file(path)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    for word in words:
        assert word in message


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_bmc_file(tmp_path / "nope.yaml")


def test_warns_when_readable_by_others(tmp_path: Path,
                                       caplog: pytest.LogCaptureFixture) -> None:
    text = f"hosts: {{c1: {{driver: ipmi, address: a, username: u, password: {SECRET}}}}}"
    with caplog.at_level(logging.WARNING):
        load_bmc_file(_write(tmp_path, text, mode=0o644))
    assert "readable by group or others" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        load_bmc_file(_write(tmp_path, text, mode=0o600))
    assert caplog.text == ""


def test_password_never_in_repr_or_errors(tmp_path: Path) -> None:
    config = BmcConfig(host="c1", driver="snmp", address="10.0.0.1", port=None,
                       username="admin", password=SECRET)
    assert SECRET not in repr(config)
    with pytest.raises(PowerError) as err:
        driver_for(config)
    assert SECRET not in str(err.value)
    assert str(err.value) == ("c1: snmp BMC 10.0.0.1: unknown driver 'snmp' "
                              "(expected one of ipmi, redfish)")
    path = _write(tmp_path, f"hosts: {{c1: {{driver: ipmi, address: a, username: u, "
                            f"password: {SECRET}, port: nope}}}}")
    with pytest.raises(ConfigError) as cerr:
        load_bmc_file(path)
    assert SECRET not in str(cerr.value)


def test_driver_for_picks_the_driver() -> None:
    from consolidator.power.ipmi import IpmiDriver
    from consolidator.power.redfish import RedfishDriver, base_url

    ipmi = BmcConfig(host="c1", driver="ipmi", address="10.0.0.1", port=None,
                     username="u", password="p")
    redfish = BmcConfig(host="c2", driver="redfish", address="10.0.0.2", port=8443,
                        username="u", password="p")
    assert isinstance(driver_for(ipmi), IpmiDriver)
    assert isinstance(driver_for(redfish), RedfishDriver)
    assert base_url(redfish) == "https://10.0.0.2:8443"
