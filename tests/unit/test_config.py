"""The INI config: defaults, typed values and one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from consolidator.app.config import load_config
from consolidator.core.errors import ConfigError


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


@pytest.mark.parametrize("text, words", [
    ("[executor]\nmax_parallel = abc\n", ["max_parallel = 'abc'", "expected a whole number"]),
    ("[cloud]\ncpu_allocation_ratio = 4  # overcommit\n",
     ["expected a number", "a comment goes on a line of its own"]),
    ("[padding]\nspare = 1  ; one\n", ["a comment goes on a line of its own"]),
])
def test_a_value_that_is_no_number_says_what_is_expected(tmp_path: Path, text: str,
                                                         words: list[str]) -> None:
    """Not Python's 'invalid literal for int() with base 10'; and INI has no comment at the
    end of a line, so a value with one is named as such."""
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    for word in words:
        assert word in str(info.value)
    assert "invalid literal" not in str(info.value)


def test_a_schedule_that_is_no_cron_expression_shows_its_form(tmp_path: Path) -> None:
    from consolidator.app.settings import cron_trigger

    config = load_config(write(tmp_path, "[daemon]\nschedule = every hour\n"))
    with pytest.raises(ConfigError) as info:
        cron_trigger(config)
    message = str(info.value)
    assert "[daemon] schedule = 'every hour'" in message
    assert "timezone = None" not in message and "'0 * * * *'" in message


def test_missing_explicit_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "absent.conf", required=True)


ROOT = Path(__file__).resolve().parents[2]


def test_reference_matches_the_schema() -> None:
    from consolidator.app.config_reference import reference_rst
    assert (ROOT / "docs" / "configuration.rst").read_text() == reference_rst(), \
        "run python tools/gen_config_reference.py"


def test_sample_config_is_valid_and_lists_every_option() -> None:
    from consolidator.app.config import OPTIONS
    sample = ROOT / "consolidator" / "deploy" / "consolidator.conf.sample"
    config = load_config(sample, required=True)
    for option in OPTIONS:
        assert (option.section, option.name) in config.values, option


def test_every_option_read_by_the_code_is_declared_and_documented() -> None:
    """Scan the package for config reads: each must be declared and in the reference."""
    import re

    from consolidator.app.config import FREE_SECTIONS, OPTIONS
    declared = {(o.section, o.name) for o in OPTIONS}
    sections = {o.section for o in OPTIONS}
    reads = set()
    for path in (ROOT / "consolidator").rglob("*.py"):
        for section, name in re.findall(r'\bget\(\s*"(\w+)",\s*"(\w+)"\s*\)', path.read_text()):
            if section in sections:
                reads.add((section, name, path.name))
        for section in re.findall(r'\.section\(\s*"(\w+)"\s*\)', path.read_text()):
            assert section in FREE_SECTIONS, (section, path.name)
    assert len(reads) > 30, "the scan found too few reads: the pattern is broken"
    reference = (ROOT / "docs" / "configuration.rst").read_text()
    for section, name, where in sorted(reads):
        assert (section, name) in declared, f"{where} reads undeclared [{section}] {name}"
        block = reference.split(f"[{section}]\n", 1)[1]
        assert f"``{name}``" in block.split("\n[", 1)[0], f"[{section}] {name} not documented"
    for section in FREE_SECTIONS:
        assert f"[{section}]" in (ROOT / "docs" / "operator-guide.rst").read_text() or \
            f"[{section}]" in (ROOT / "docs" / "algorithms.rst").read_text(), section


@pytest.mark.parametrize("option, value, kind", [("algorithm", "bestfit", "algorithm"),
                                                  ("ranking", "nope", "ranking")])
def test_planner_names_are_checked_against_the_registries(tmp_path: Path, option: str,
                                                          value: str, kind: str) -> None:
    """[planner] algorithm and ranking are validated at load time from the same registries
    that 'consolidator algorithms' lists."""
    from consolidator.app.context import AppContext

    path = tmp_path / "c.conf"
    path.write_text(f"[planner]\n{option} = {value}\n")
    with pytest.raises(ConfigError, match=rf"\[planner\] {option} = '{value}': unknown "
                                          rf"{kind}: choose one of ") as caught:
        _ = AppContext(config_file=str(path)).config
    # the default, auto, is one of the algorithm's choices, as in plan's own message
    assert ("auto, " in str(caught.value)) == (option == "algorithm")
