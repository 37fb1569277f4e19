"""Library noise stays off the terminal below -v; an unreachable cloud is one short line."""

from __future__ import annotations

import io
import logging
import socket
import warnings
from pathlib import Path

import pytest
import yaml

from consolidator.cli.logs import LIBRARIES, configure_logging
from tests.functional.cli import run


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def unreachable(tmp_path: Path) -> tuple[dict[str, str], str]:
    """A clouds.yaml entry 'lab' whose auth URL nothing listens on, and a migrated database."""
    url = f"http://127.0.0.1:{_closed_port()}/v3"
    clouds = {"clouds": {"lab": {"auth": {
        "auth_url": url, "username": "u", "password": "p", "project_name": "admin",
        "user_domain_name": "Default", "project_domain_name": "Default"},
        "region_name": "RegionOne", "identity_api_version": 3}}}
    (tmp_path / "clouds.yaml").write_text(yaml.safe_dump(clouds))
    env = {"OS_CLIENT_CONFIG_FILE": str(tmp_path / "clouds.yaml"),
           "CONSOLIDATOR_DB_URL": f"sqlite:///{tmp_path / 'c.db'}"}
    assert run("db", "upgrade", env=env).code == 0
    return env, url


@pytest.mark.parametrize("named", [True, False])
def test_an_unreachable_cloud_is_one_line_naming_the_url_and_the_entry(
        unreachable: tuple[dict[str, str], str], named: bool) -> None:
    """No keystoneauth warning, no 'cloud None', one line under 200 characters."""
    env, url = unreachable
    result = run(*(["--cloud", "lab"] if named else []), "snapshot", env=env)
    assert result.code == 1
    errors = [line for line in result.err.splitlines() if not line.startswith("reading cloud")]
    assert len(errors) == 1, result.err
    line = errors[0]
    assert len(line) < 200, line
    assert url in line and "'lab'" in line and "clouds.yaml" in line, line
    assert "None" not in result.err and "WARNING" not in result.err


@pytest.mark.parametrize(("verbose", "shown"), [(0, False), (1, True)])
def test_library_warnings_reach_the_terminal_only_with_v(verbose: int, shown: bool) -> None:
    """keystoneauth, sushy, urllib3 and pyghmi warnings are quiet below -v; ours are not."""
    stream = io.StringIO()
    root = logging.getLogger()
    saved = (root.handlers[:], root.level,
             {name: logging.getLogger(name).level for name in LIBRARIES})
    try:
        with warnings.catch_warnings():
            configure_logging(verbose, stream)
            for name in ("keystoneauth.identity.generic.base", "sushy.main", "urllib3.poolmanager",
                         "pyghmi.ipmi"):
                logging.getLogger(name).warning("library says %s", name)
            logging.getLogger("consolidator.execution.executor").warning("ours")
            warnings.warn_explicit("Unverified HTTPS request", UserWarning,
                                   "connectionpool.py", 1, module="urllib3.connectionpool")
    finally:
        logging.captureWarnings(False)
        root.handlers[:], level, levels = saved
        root.setLevel(level)
        for name, lib_level in levels.items():
            logging.getLogger(name).setLevel(lib_level)
    text = stream.getvalue()
    assert "ours" in text
    assert ("library says" in text) is shown, text
    assert ("Unverified HTTPS" in text) is shown, text
