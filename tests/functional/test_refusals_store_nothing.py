"""A refused command stores nothing (docs/operator-guide.rst: "Nothing is stored: a refused
plan or hosts drain leaves no snapshot behind"), a declined rollback leaves no rows, and the
fake cloud and the last line of defence say what to do in one line."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import yaml

from tests.functional.cli import run
from tests.functional.drain_story import scenario as drain_scenario
from tests.functional.served import served_cloud
from tests.functional.test_apply_cli import Operator, operator_for, scenario
from tests.functional.waits import COMMAND_TIMEOUT_S


def stored(op: Operator, what: str) -> list:
    listed = op(what, "list", "--format", "json")
    assert listed.code == 0, listed.err
    return json.loads(listed.out)


def without_ortools(tmp_path: Path) -> dict[str, str]:
    """An environment where 'import ortools' fails, as where OR-Tools is not installed."""
    shadow = tmp_path / "no-ortools"
    (shadow / "ortools").mkdir(parents=True)
    (shadow / "ortools" / "__init__.py").write_text(
        "raise ImportError('OR-Tools is not installed (simulated)')\n")
    path = os.environ.get("PYTHONPATH", "")
    return {"PYTHONPATH": f"{shadow}{os.pathsep}{path}" if path else str(shadow)}


def test_a_refused_plan_stores_no_snapshot(tmp_path: Path) -> None:
    with served_cloud(scenario(bandwidth=1e6), tmp_path) as served:
        op = operator_for(served, tmp_path)
        for args in (("--objective", "energy", "--max-migrations", "3"),
                     ("--objective", "energy", "--target-hosts", "3"),
                     ("--objective", "energy", "--max-moved-gib", "2")):
            refused = op("plan", *args)
            assert refused.code == 2, refused.err
            assert "work with --objective hosts" in refused.err
            assert stored(op, "snapshots") == [], args
        env = {"OS_CLIENT_CONFIG_FILE": str(served.clouds_yaml),
               "CONSOLIDATOR_BMC_FILE": str(served.bmc_yaml), **without_ortools(tmp_path)}
        exact = run("--config", str(op.config), "--cloud", served.cloud_name, "plan", "-a",
                    "exact", db_url=op.db_url, env=env)
        assert exact.code == 2, exact.err
        assert "algorithm exact needs OR-Tools" in exact.err
        assert "Traceback" not in exact.err
        assert stored(op, "snapshots") == [] and stored(op, "plans") == []


def test_energy_objective_from_the_config_with_a_budget_stores_nothing(
        tmp_path: Path) -> None:
    with served_cloud(scenario(bandwidth=1e6), tmp_path) as served:
        op = operator_for(served, tmp_path)
        op.config.write_text(op.config.read_text() + "objective = energy\n")
        refused = op("plan", "--max-migrations", "3")
        assert refused.code == 2, refused.err
        assert stored(op, "snapshots") == []


def test_a_blocked_drain_stores_no_snapshot(tmp_path: Path) -> None:
    with served_cloud(drain_scenario(), tmp_path) as served:
        op = operator_for(served, tmp_path)
        blocked = op("hosts", "drain", "c3", "--yes")
        assert blocked.code == 1, blocked.out + blocked.err
        assert "the drain is blocked, nothing moves" in blocked.err
        assert stored(op, "snapshots") == [] and stored(op, "plans") == []


def test_a_declined_rollback_stores_nothing(tmp_path: Path) -> None:
    with served_cloud(scenario(bandwidth=1e6), tmp_path) as served:
        op = operator_for(served, tmp_path)
        snap = op("snapshot")
        assert snap.code == 0, snap.err
        snap_id = snap.out.strip()
        plan = op.plan()
        applied = op("apply", plan["id"])
        assert applied.code == 0, applied.out + applied.err
        snapshots, plans = stored(op, "snapshots"), stored(op, "plans")
        env = {**{k: v for k, v in os.environ.items()
                  if not k.startswith("OS_") and k != "CONSOLIDATOR_DB_URL"},
               "OS_CLIENT_CONFIG_FILE": str(served.clouds_yaml),
               "CONSOLIDATOR_BMC_FILE": str(served.bmc_yaml), "CONSOLIDATOR_DB_URL": op.db_url}
        for answer in ("n\n", ""):
            declined = subprocess.run(
                [sys.executable, "-m", "consolidator", "--config", str(op.config), "--cloud",
                 served.cloud_name, "rollback", snap_id], input=answer, capture_output=True,
                text=True, env=env, timeout=COMMAND_TIMEOUT_S)
            assert declined.returncode == 1, declined.stderr
            assert "consolidator: aborted" in declined.stderr
            assert "roll back to snapshot" in declined.stderr + declined.stdout
            assert stored(op, "snapshots") == snapshots
            assert stored(op, "plans") == plans
        done = op("rollback", snap_id, "--yes")
        assert done.code == 0, done.out + done.err
        assert "succeeded" in done.out


def test_fake_cloud_on_a_port_in_use_says_so_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(scenario(bandwidth=1e6)))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run("fake-cloud", "serve", "--scenario", str(path), "--port", str(port))
    assert result.code == 2, result.err
    assert result.err.strip().splitlines() == [
        f"consolidator: error: port {port} on 127.0.0.1 is in use: choose another --port "
        f"(or 0 for any free one)"]


def test_verbose_unexpected_error_shows_the_traceback_without_suggesting_verbose(
        tmp_path: Path) -> None:
    """An unexpected error (here the port in use, raised as a bare OSError inside a command
    run through main() with a broken handler) names --verbose only when it was not given."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys\n"
        "import consolidator.cli as cli\n"
        "import click\n"
        "@cli.cli.command('boom')\n"
        "def boom():\n"
        "    raise RuntimeError('kaboom')\n"
        "cli.LazyGroup.get_command = lambda self, ctx, name: boom if name == 'boom' else None\n"
        "sys.exit(cli.main(sys.argv[1:]))\n")
    quiet = subprocess.run([sys.executable, str(probe), "boom"], capture_output=True,
                           text=True, timeout=COMMAND_TIMEOUT_S)
    assert quiet.returncode == 1
    assert quiet.stderr.strip().splitlines() == [
        "consolidator: unexpected error: RuntimeError: kaboom (run with --verbose for the "
        "traceback)"]
    loud = subprocess.run([sys.executable, str(probe), "-v", "boom"], capture_output=True,
                          text=True, timeout=COMMAND_TIMEOUT_S)
    assert loud.returncode == 1
    assert "Traceback" in loud.stderr and "RuntimeError: kaboom" in loud.stderr
    assert "--verbose" not in loud.stderr
    assert loud.stderr.strip().splitlines()[-1] == \
        "consolidator: unexpected error: RuntimeError: kaboom"
