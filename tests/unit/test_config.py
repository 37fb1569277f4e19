"""The INI config: defaults, typed values and one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from consolidator.config import load_config
from consolidator.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "consolidator.conf"
    path.write_text(text)
    return path


def test_defaults_and_typed_values(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "[cloud]\nname = prod\ncpu_allocation_ratio = 4\n"))
    assert config.get("cloud", "name") == "prod"
    assert config.get("cloud", "cpu_allocation_ratio") == 4.0
    assert config.get("database", "url") == ""


@pytest.mark.parametrize("text, message", [
    ("[clod]\nname = x\n", "unknown section [clod]"),
    ("[cloud]\nnmae = x\n", "unknown option 'nmae' in [cloud]"),
    ("[cloud]\ncpu_allocation_ratio = lots\n", "cpu_allocation_ratio = 'lots'"),
    ("name = x\n", "malformed config"),
    ("[planner]\nspare = 1\nSPARE = 2\n", "option 'spare' in section 'planner' already"),
    ("[planner]\nspare: 1\n", "line 2: expected 'name = value'"),
])
def test_bad_config_is_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[")) as info:
        load_config(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "absent.conf", required=True)


ROOT = Path(__file__).resolve().parents[2]


def test_reference_matches_the_schema() -> None:
    from consolidator.config import reference_rst
    assert (ROOT / "docs" / "configuration.rst").read_text() == reference_rst(), \
        "run python tools/gen_config_reference.py"


def test_sample_config_is_valid_and_lists_every_option() -> None:
    from consolidator.config import OPTIONS
    sample = ROOT / "etc" / "consolidator" / "consolidator.conf.sample"
    config = load_config(sample, required=True)
    for option in OPTIONS:
        assert (option.section, option.name) in config.values, option
