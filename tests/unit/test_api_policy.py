"""The API's policy as oslo.policy's own tools see it (issue 46): the entry points setup.cfg
declares load the rules in code, oslopolicy-sample-generator --namespace consolidator writes
every rule, oslopolicy-checker judges a token's roles by them, and docs/policy.rst is
generated from them."""

from __future__ import annotations

import configparser
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from consolidator.api.policies import list_rules

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def entry_points(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """An environment whose path holds a dist-info with the entry points setup.cfg
    declares, as an install of this tree registers them."""
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    declared = parser["options.entry_points"]
    folder = tmp_path_factory.mktemp("entry") / "consolidator_policy_probe-0.dist-info"
    folder.mkdir()
    (folder / "METADATA").write_text("Metadata-Version: 2.1\nName: consolidator-policy-probe"
                                     "\nVersion: 0\n")
    text = "".join(f"[{group}]\n{declared[group].strip()}\n\n"
                   for group in ("oslo.policy.policies", "oslo.policy.enforcer"))
    (folder / "entry_points.txt").write_text(text)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder.parent), str(ROOT),
                                                      env.get("PYTHONPATH", "")]))
    return env


def tool(name: str) -> str:
    found = shutil.which(name) or str(Path(sys.executable).with_name(name))
    assert Path(found).exists(), f"{name} is missing: pip install oslo.policy"
    return found


def test_the_sample_generator_writes_every_rule(entry_points: dict[str, str]) -> None:
    done = subprocess.run([tool("oslopolicy-sample-generator"), "--namespace", "consolidator"],
                          capture_output=True, text=True,
                          env=entry_points, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    for rule in list_rules():
        assert f'#"{rule.name}": "{rule.check_str}"' in done.stdout, rule.name


def test_the_checker_judges_roles_by_the_rules(entry_points: dict[str, str],
                                               tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(yaml.safe_dump({r.name: r.check_str for r in list_rules()}))
    access = tmp_path / "access.json"
    access.write_text(json.dumps({"token": {
        "roles": [{"name": "member"}, {"name": "reader"}],
        "project": {"id": "p1", "name": "admin", "domain": {"id": "default"}},
        "user": {"id": "u1", "name": "operator", "domain": {"id": "default"}}}}))
    done = subprocess.run([tool("oslopolicy-checker"), "--policy", str(policy),
                           "--access", str(access)], capture_output=True, text=True,
                          env=entry_points, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    verdicts = {rule: verdict for verdict, rule in (
        line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)}
    assert verdicts["consolidation:plan:approve"] == "passed"
    assert verdicts["consolidation:plan:apply"] == "failed"
    assert verdicts["consolidation:host:list"] == "passed"


def test_the_policy_reference_is_generated_from_the_rules() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_policy_reference",
                                                  ROOT / "tools" / "gen_policy_reference.py")
    assert spec is not None and spec.loader is not None
    tool_module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool_module)
    assert (ROOT / "docs" / "policy.rst").read_text() == tool_module.reference_rst(), \
        "run: python tools/gen_policy_reference.py"
