"""Issue 34: the systemd unit scored 8.5 EXPOSED, hard-coded /usr/local/bin and had no
watchdog. The shipped unit is Type=notify with WatchdogSec=, hardened under 4.0 by
'systemd-analyze security' (run offline on the file, as here), and 'consolidator config unit'
prints it with the install's own path; the BMC file comes as a systemd credential."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from consolidator.app.context import AppContext
from consolidator.app.shipped import DEPLOY
from consolidator.app.unit_file import unit_text

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = DEPLOY / "consolidator.service"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze") or "/usr/bin/systemd-analyze"


@pytest.fixture(scope="module")
def analyze() -> str:
    if not Path(SYSTEMD_ANALYZE).exists():
        pytest.fail("systemd-analyze is missing: install systemd (Debian's package ships it)")
    return SYSTEMD_ANALYZE


def exposure(analyze: str, unit: Path) -> float:
    done = subprocess.run([analyze, "security", "--offline=yes", str(unit)],
                          capture_output=True, text=True, timeout=120, check=False)
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", done.stdout + done.stderr)
    assert found, done.stdout + done.stderr
    return float(found.group(1))


def printed_unit(tmp_path: Path, *args: str) -> Path:
    done = subprocess.run([sys.executable, "-m", "consolidator", "config", "unit", *args],
                          capture_output=True, text=True, timeout=120, check=True)
    path = tmp_path / "consolidator.service"
    path.write_text(done.stdout)
    return path


def test_the_shipped_unit_is_what_config_unit_prints_for_the_search_path(
        tmp_path: Path) -> None:
    assert SHIPPED.read_text() == unit_text(), \
        "run: consolidator config unit --search-path > consolidator/deploy/consolidator.service"
    assert printed_unit(tmp_path, "--search-path").read_text() == SHIPPED.read_text()


def test_the_unit_is_notify_with_a_watchdog_and_no_hard_coded_prefix() -> None:
    lines = SHIPPED.read_text().splitlines()
    assert "Type=notify" in lines and "NotifyAccess=main" in lines
    assert any(re.fullmatch(r"WatchdogSec=\d+", line) for line in lines)
    assert "LoadCredential=bmc.yaml:/etc/consolidator/bmc.yaml" in lines
    for setting in ("ProtectSystem=strict", "StateDirectory=consolidator",
                    "NoNewPrivileges=yes"):
        assert setting in lines
    exec_start = next(line for line in lines if line.startswith("ExecStart="))
    assert exec_start.startswith("ExecStart=consolidator ")
    assert "/usr/local" not in exec_start


def test_the_shipped_unit_scores_under_4(analyze: str) -> None:
    assert exposure(analyze, SHIPPED) < 4.0


def test_config_unit_runs_this_install_and_systemd_accepts_it(analyze: str,
                                                              tmp_path: Path) -> None:
    unit = printed_unit(tmp_path)
    exec_start = next(line for line in unit.read_text().splitlines()
                      if line.startswith("ExecStart="))
    program = exec_start.removeprefix("ExecStart=").split()[0]
    assert Path(program).is_absolute() and Path(program).exists(), exec_start
    done = subprocess.run([analyze, "verify", "--man=no", str(unit)], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert exposure(analyze, unit) < 4.0


def test_the_bmc_file_comes_from_the_credentials_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    credentials = tmp_path / "credentials"
    credentials.mkdir()
    ctx = AppContext(config_file=None)
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(credentials))
    assert ctx.bmc_path() == ctx.settings.bmc_file          # no bmc.yaml credential
    (credentials / "bmc.yaml").write_text("hosts: {}\n")
    assert ctx.bmc_path() == str(credentials / "bmc.yaml")
    assert AppContext(bmc_file="/x/bmc.yaml").bmc_path() == "/x/bmc.yaml"   # --bmc-file wins
    monkeypatch.delenv("CREDENTIALS_DIRECTORY")
    assert ctx.bmc_path() == ctx.settings.bmc_file
