"""Errors an operator met walking the guide (issue 27): each is one line, naming what to fix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.functional.cli import run
from tests.functional.waits import PATIENCE_S


def plan_of(db_url: str, scenario: Path) -> str:
    made = run("plan", "--scenario", str(scenario), "-a", "firstfit", "-f", "id", db_url=db_url)
    assert made.code == 0, made.err
    return made.out.strip()


def test_a_full_disk_on_standard_output_is_one_line_naming_it(db_url: str,
                                                              bundled_scenario: Path) -> None:
    """'plan show ... --format json > /dev/full' ended in 'unexpected error: OSError'."""
    plan = plan_of(db_url, bundled_scenario)
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "consolidator", "--db-url", db_url,
                               "plan", "show", plan, "--format", "json"], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=PATIENCE_S)
    assert proc.returncode == 1
    assert proc.stderr.strip() == ("consolidator: error: cannot write standard output "
                                   "(/dev/full): No space left on device")


def test_serve_refuses_an_unwritable_clouds_yaml_before_printing_anything(
        tmp_path: Path, bundled_scenario: Path) -> None:
    """It printed the credentials, then 'unexpected error: FileNotFoundError'."""
    served = run("fake-cloud", "serve", "--scenario", str(bundled_scenario),
                 "--write-clouds-yaml", "/nonexistent/dir/c.yaml")
    assert served.code == 1 and served.out == ""
    assert served.err.strip() == ("consolidator: error: cannot write /nonexistent/dir/c.yaml: "
                                  "directory /nonexistent/dir does not exist")


def test_cancelling_twice_says_it_was_already_cancelled(db_url: str,
                                                        bundled_scenario: Path) -> None:
    """It said 'was cancelled: it cannot become cancelled'."""
    plan = plan_of(db_url, bundled_scenario)
    assert run("plan", "cancel", plan, db_url=db_url).out.strip() == f"plan {plan} cancelled"
    again = run("plan", "cancel", plan[:8], db_url=db_url)
    assert again.code == 0 and again.out.strip() == f"plan {plan} was already cancelled"
    approve = run("plan", "approve", plan, db_url=db_url)
    assert approve.code == 2 and "it cannot become approved" in approve.err


def test_the_fake_server_says_nothing_when_a_client_hangs_up(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The test run printed an unhandled BrokenPipeError traceback from the fake server."""
    from consolidator.emulators.fake.faults import Faults
    from consolidator.emulators.fake.server import App, HTTPServer, Router

    server = HTTPServer(App(Router(), Faults(), lambda _token: True))
    try:
        for error in (BrokenPipeError(32, "Broken pipe"), ConnectionResetError(104, "reset")):
            try:
                raise error
            except ConnectionError:
                server._server.handle_error(None, ("127.0.0.1", 1))
        assert capsys.readouterr().err == ""
        try:
            raise ValueError("a real bug")
        except ValueError:
            server._server.handle_error(None, ("127.0.0.1", 1))
        assert "ValueError: a real bug" in capsys.readouterr().err
    finally:
        server._server.server_close()


def test_cloud_selection_errors_carry_the_hint(db_url: str, tmp_path: Path) -> None:
    """With no cloud named: 'Auth plugin requires parameters ...: auth_url' and no hint;
    OS_CLIENT_CONFIG_FILE naming no file was silently ignored."""
    home = {"HOME": str(tmp_path)}
    unnamed = run("snapshot", db_url=db_url, env=home, cwd=tmp_path)
    assert unnamed.code == 1 and "no cloud is configured: no clouds.yaml" in unnamed.err
    assert "OS_CLIENT_CONFIG_FILE" in unnamed.err and "--cloud NAME" in unnamed.err
    missing = run("snapshot", db_url=db_url,
                  env={**home, "OS_CLIENT_CONFIG_FILE": str(tmp_path / "nope.yaml")})
    assert missing.code == 1
    assert missing.err.strip() == (f"consolidator: error: OS_CLIENT_CONFIG_FILE="
                                   f"{tmp_path / 'nope.yaml'}: no such file (point it at "
                                   f"your clouds.yaml, or unset it)")


def test_os_cloud_is_an_alias_of_cloud(db_url: str, tmp_path: Path) -> None:
    """--os-cloud was rejected ('No such option'), as the openstack client spells it."""
    clouds = tmp_path / "clouds.yaml"
    clouds.write_text("clouds: {}\n")
    env = {"HOME": str(tmp_path), "OS_CLIENT_CONFIG_FILE": str(clouds)}
    for option in ("--os-cloud", "--cloud"):
        named = run(option, "lab-x", "snapshot", db_url=db_url, env=env)
        assert named.code == 1, named.err
        assert named.err.startswith("consolidator: error: cloud 'lab-x': ")


def test_the_single_cloud_of_clouds_yaml_is_named_when_none_is_given(
        db_url: str, tmp_path: Path, bundled_scenario: Path) -> None:
    """With one cloud in clouds.yaml and none named, openstacksdk uses that cloud and the
    snapshot is stored under its name; the progress line said 'default'."""
    from tests.functional.served import served_cloud

    with served_cloud(bundled_scenario, tmp_path, bmc=False, cloud_name="alpha") as cloud:
        # the served file also holds alpha-reader, alpha-operator and alpha-admin: keep alpha
        doc = yaml.safe_load(cloud.clouds_yaml.read_text())
        single = tmp_path / "single.yaml"
        single.write_text(yaml.safe_dump({"clouds": {"alpha": doc["clouds"]["alpha"]}}))
        env = {"HOME": str(tmp_path), "OS_CLIENT_CONFIG_FILE": str(single)}
        taken = run("snapshot", db_url=db_url, env=env)
        assert taken.code == 0, taken.err
        assert "reading cloud 'alpha' ..." in taken.err.splitlines()
        listed = run("snapshots", "list", db_url=db_url, env=env)
        assert listed.out.splitlines()[2].split()[1] == "alpha"


def test_several_clouds_and_none_named_is_one_line_naming_them(db_url: str,
                                                              tmp_path: Path) -> None:
    """The clouds.yaml fake-cloud serve writes holds fake, fake-reader, fake-operator and
    fake-admin: with none named, openstacksdk fell back to an empty cloud and said
    "cloud '(default)': Auth plugin requires parameters which were not given: auth_url"."""
    entry = {"auth": {"auth_url": "http://127.0.0.1:9/identity/v3", "username": "admin",
                      "password": "secret", "project_name": "admin"}}
    clouds = tmp_path / "clouds.yaml"
    clouds.write_text(yaml.safe_dump({"clouds": {"fake": entry, "fake-reader": entry}}))
    env = {"HOME": str(tmp_path), "OS_CLIENT_CONFIG_FILE": str(clouds)}
    taken = run("snapshot", db_url=db_url, env=env)
    assert taken.code == 1
    assert taken.err.strip() == (
        f"consolidator: error: clouds.yaml {clouds} defines 2 clouds (fake, fake-reader) and "
        f"none is named: pass --cloud NAME or set OS_CLOUD")
