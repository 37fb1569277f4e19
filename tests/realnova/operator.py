"""Run consolidator as an operator would, against a served real Nova."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.functional.cli import Result, run
from tests.functional.waits import COMMAND_TIMEOUT_S, wait_until
from tests.realnova.served import NovaView, ServedCloud

CONFIG = """\
[executor]
poll_interval = 0.2
migration_timeout = 120
power_timeout = 120
lease_ttl = 30
max_parallel = 4

[daemon]
auto_apply = {auto_apply}

[planner]
# These clouds are small and tightly packed on purpose: no host is kept for N+1.
n_plus_one = false
"""


@dataclass
class Operator:
    """consolidator commands against the served cloud, with one config and database."""

    served: ServedCloud
    db_url: str
    config: Path

    @property
    def env(self) -> dict[str, str]:
        """The environment each command runs in."""
        return {"OS_CLIENT_CONFIG_FILE": str(self.served.clouds_yaml),
                "CONSOLIDATOR_BMC_FILE": str(self.served.bmc_yaml)}

    def __call__(self, *args: str, timeout: float = COMMAND_TIMEOUT_S) -> Result:
        return run("--config", str(self.config), "--cloud", self.served.cloud_name, *args,
                   db_url=self.db_url, env=self.env, timeout=timeout)

    def ok(self, *args: str) -> Result:
        """Run a command that must succeed."""
        result = self(*args)
        assert result.code == 0, f"{args}: {result.out}{result.err}"
        return result

    def popen(self, *args: str) -> subprocess.Popen[str]:
        """Start a command in the background."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        env.update(self.env, CONSOLIDATOR_DB_URL=self.db_url)
        return subprocess.Popen([sys.executable, "-m", "consolidator", "--config",
                                 str(self.config), "--cloud", self.served.cloud_name, *args],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)

    def plan(self, algorithm: str = "zoned-bestfit", approve: bool = True) -> dict[str, Any]:
        """Plan, and approve it."""
        plan = json.loads(self.ok("plan", "-a", algorithm, "--format", "json").out)
        if approve:
            self.ok("plan", "approve", plan["id"])
        return plan


def operator_for(served: ServedCloud, tmp_path: Path, *, auto_apply: bool = False) -> Operator:
    """An Operator with its own config and migrated SQLite database."""
    config = tmp_path / "consolidator.conf"
    config.write_text(CONFIG.format(auto_apply=str(auto_apply).lower()))
    op = Operator(served=served, db_url=f"sqlite:///{tmp_path / 'c.db'}", config=config)
    op.ok("db", "upgrade")
    return op


def cloud_state(nova: NovaView) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    """Where each server is, each host's power, and each nova-compute's status."""
    return (nova.where(), nova.power(),
            {host: service.status for host, service in nova.services().items()})


@dataclass(frozen=True)
class Baseline:
    """The cloud as a module's tests start from it: a snapshot, and its state."""

    snapshot: str
    state: tuple[dict[str, str], dict[str, str], dict[str, str]]


def baseline(op: Operator, nova: NovaView) -> Baseline:
    """Record the cloud as it is now."""
    return Baseline(snapshot=op.ok("snapshot").out.strip(), state=cloud_state(nova))


@contextmanager
def restored(op: Operator, nova: NovaView, start: Baseline) -> Iterator[None]:
    """After the block, put the cloud back as it was at start if the block changed it (a
    rollback to its snapshot): tests sharing one cloud then need no order among them."""
    assert cloud_state(nova) == start.state, "the cloud is not as its tests start from it"
    yield
    if cloud_state(nova) != start.state:
        op.ok("rollback", start.snapshot, "--yes")
        wait_until(lambda: cloud_state(nova) == start.state, "the cloud to be as it was")
