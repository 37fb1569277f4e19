"""The API's systemd unit (issue 46): hardened as the daemon's, scored by
'systemd-analyze security' offline, and shipped with the package."""

from __future__ import annotations

import shutil
from pathlib import Path

from consolidator.app.shipped import DEPLOY
from tests.functional.cli import run
from tests.unit.test_unit_file import exposure

API_UNIT = DEPLOY / "consolidator-api.service"
DAEMON_UNIT = DEPLOY / "consolidator.service"


def test_the_api_unit_is_hardened_like_the_daemons() -> None:
    analyze = shutil.which("systemd-analyze") or "/usr/bin/systemd-analyze"
    assert Path(analyze).exists(), "install systemd (Debian's package ships systemd-analyze)"
    assert exposure(analyze, API_UNIT) <= exposure(analyze, DAEMON_UNIT) + 0.2
    daemon = set(DAEMON_UNIT.read_text().splitlines())
    api = set(API_UNIT.read_text().splitlines())
    hardening = {line for line in daemon if line.split("=", 1)[0] in {
        "ProtectSystem", "ProtectHome", "PrivateTmp", "PrivateDevices", "NoNewPrivileges",
        "CapabilityBoundingSet", "RestrictAddressFamilies", "SystemCallFilter", "UMask",
        "PrivateUsers", "ProtectProc", "RestrictNamespaces"}}
    assert hardening <= api, hardening - api
    assert not any(line.startswith("LoadCredential=") for line in api), \
        "the API never reads bmc.yaml: it must not be given it"
    assert "ExecStart=consolidator --config /etc/consolidator/consolidator.conf api" in api


def test_config_sample_prints_the_api_unit() -> None:
    done = run("config", "sample", "consolidator-api.service")
    assert done.code == 0, done.err
    assert done.out == API_UNIT.read_text()
