"""Issue 33: a config file holding [notify] secret or a database password was accepted at mode
0644 without a word (the bmc.yaml check already refused that), and a non-UTF-8 bmc.yaml gave
a raw UnicodeDecodeError. Each is now one line naming the file and the fix, and a
non-zero exit code (1, as every config error)."""

from __future__ import annotations

from pathlib import Path

import pytest

from consolidator.app.config import load_config
from consolidator.core.errors import ConfigError
from consolidator.power.bmc_file import load_bmc_file
from tests.functional.cli import run


def config(tmp_path: Path, text: str, mode: int) -> Path:
    path = tmp_path / "consolidator.conf"
    path.write_text(text)
    path.chmod(mode)
    return path


@pytest.mark.parametrize("text, holds", [
    ("[notify]\nwebhook_url = http://127.0.0.1:1/\nsecret = s3cret\n", "[notify] secret"),
    ("[database]\nurl = postgresql://consolidator:pw@db.example/consolidator\n",
     "a password in [database] url"),
])
@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604])
def test_a_readable_config_holding_a_secret_is_refused(tmp_path: Path, text: str, holds: str,
                                                       mode: int) -> None:
    path = config(tmp_path, text, mode)
    with pytest.raises(ConfigError) as refused:
        load_config(path, required=True)
    message = str(refused.value)
    assert holds in message and f"chmod 600 {path}" in message and "\n" not in message
    path.chmod(0o600)
    load_config(path, required=True)


def test_a_readable_config_without_a_secret_is_fine(tmp_path: Path) -> None:
    load_config(config(tmp_path, "[notify]\nwebhook_url = http://127.0.0.1:1/\nsecret =\n"
                       "[database]\nurl = postgresql://consolidator@db/c\n", 0o644),
                required=True)


def test_the_command_line_refuses_it_in_one_line(tmp_path: Path) -> None:
    path = config(tmp_path, "[notify]\nsecret = s3cret\n", 0o644)
    result = run("--config", str(path), "plans", "list", db_url=f"sqlite:///{tmp_path}/c.db")
    assert result.code == 1
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "readable by group or others" in lines[0], result.err


def test_a_config_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "consolidator.conf"
    path.write_bytes(b"[daemon]\nschedule = 0 * * * *\n# caf\xe9\n")
    with pytest.raises(ConfigError, match="not UTF-8 text .* save it as UTF-8"):
        load_config(path, required=True)


def test_a_bmc_file_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bmc.yaml"
    path.write_bytes(b"hosts:\n  c1: {driver: ipmi, address: 127.0.0.1, username: r\xe9,"
                     b" password: x}\n")
    path.chmod(0o600)
    with pytest.raises(ConfigError) as refused:
        load_bmc_file(path)
    message = str(refused.value)
    assert message.startswith(f"{path}: not UTF-8 text") and "\n" not in message
    assert "save it as UTF-8" in message
