"""'consolidator api': its help works without the 'api' extra, and without it the command
says which extra is missing; with it, it serves on 127.0.0.1 and answers GET /."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from consolidator.emulators.fake.cloud import FakeCloud
from consolidator.emulators.fake.process import stop_child
from consolidator.scenario.files import parse_scenario
from tests.functional.api_world import DOC
from tests.functional.cli import run
from tests.functional.waits import wait_until

WITHOUT = ("import sys; sys.modules['{0}'] = None; from consolidator.cli import main; "
           "sys.exit(main(sys.argv[1:]))")


@pytest.mark.parametrize("module", ["waitress", "keystonemiddleware", "flask"])
def test_without_the_extra_help_works_and_the_command_names_the_extra(module: str) -> None:
    helped = subprocess.run([sys.executable, "-c", WITHOUT.format(module), "api", "--help"],
                            capture_output=True, text=True, timeout=120, check=False)
    assert helped.returncode == 0 and "--port" in helped.stdout, helped.stderr
    refused = subprocess.run([sys.executable, "-c", WITHOUT.format(module), "api"],
                             capture_output=True, text=True, timeout=120, check=False)
    assert refused.returncode == 2
    assert refused.stderr.strip() == (f"consolidator: error: consolidator api needs the 'api' "
                                      f"extra, and {module} is missing: pip install "
                                      f"'consolidator[api]'")


def test_consolidator_api_serves_on_loopback(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'api.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    with FakeCloud(parse_scenario(DOC)) as cloud:
        clouds = cloud.write_clouds_yaml(tmp_path / "clouds.yaml")
        log = tmp_path / "api.log"
        env = {"OS_CLIENT_CONFIG_FILE": str(clouds), "CONSOLIDATOR_DB_URL": db_url,
               "PATH": "/usr/bin:/bin"}
        env["PYTHONPATH"] = os.environ.get("PYTHONPATH", "")
        with log.open("w") as out:
            server = subprocess.Popen([sys.executable, "-m", "consolidator", "--cloud", "fake",
                                       "api", "--port", "0"], stdout=out,
                                      stderr=subprocess.STDOUT, env=env, text=True)
        try:
            line = wait_until(lambda: next((x for x in log.read_text().splitlines()
                                            if "http://" in x), None) or
                              (server.poll() is not None and log.read_text()),
                              "the API says where it listens")
            assert server.poll() is None, line
            assert "http://127.0.0.1:" in line
            url = line.split("on ", 1)[1].split()[0]
            versions = requests.get(url, timeout=30)
            assert versions.status_code == 200 and versions.json()["versions"]
            assert requests.get(url + "v1/plans", timeout=30).status_code == 401
            token = cloud.connect("reader").auth_token
            assert requests.get(url + "v1/plans", headers={"X-Auth-Token": token},
                                timeout=30).status_code == 200
        finally:
            stop_child(server)
