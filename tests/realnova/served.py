"""Serve the real Nova (`fake-cloud serve --backend nova`) in a subprocess, and look at it
through openstacksdk: every assertion is about Nova's own view."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from consolidator.emulators.fake.process import stop_child
from tests.functional.served import ServedCloud, _consolidator
from tests.functional.waits import PATIENCE_S, wait_until

#: Start-up of a small real cloud takes 5-15 s, a minute or more on a loaded machine; the
#: deadline only bounds a start that never ends.
START_TIMEOUT_S = PATIENCE_S


@contextmanager
def served_nova(scenario: Mapping[str, Any], tmp_path: Path, *, migration_seconds: float = 1.0,
                service_down_time: int = 6) -> Iterator[ServedCloud]:
    """Serve a scenario on the real Nova with BMCs, in a subprocess, until the block ends."""
    scenario_file = tmp_path / "scenario.yaml"
    scenario_file.write_text(yaml.safe_dump(dict(scenario), sort_keys=False))
    clouds_yaml, bmc_yaml = tmp_path / "clouds.yaml", tmp_path / "bmc.yaml"
    out_log, nova_log = tmp_path / "served.out", tmp_path / "nova.log"
    args = [*_consolidator(), "fake-cloud", "serve", "--backend", "nova",
            "--scenario", str(scenario_file), "--bmc", "--write-bmc-yaml", str(bmc_yaml),
            "--write-clouds-yaml", str(clouds_yaml), "--cloud-name", "realnova",
            "--migration-seconds", str(migration_seconds),
            "--service-down-time", str(service_down_time), "--log-file", str(nova_log)]
    with out_log.open("w") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not clouds_yaml.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"fake-cloud serve --backend nova did not start:\n"
                                   f"{out_log.read_text()}")
            time.sleep(0.2)
        entry = yaml.safe_load(clouds_yaml.read_text())["clouds"]["realnova"]
        base = entry["compute_endpoint_override"].split("/compute/", 1)[0]
        yield ServedCloud(clouds_yaml=clouds_yaml, bmc_yaml=bmc_yaml, cloud_name="realnova",
                          control_url=f"{base}/_fake", process=process)
    finally:
        stop_child(process, timeout=30)


@dataclass
class NovaView:
    """What Nova and Placement say, read fresh through openstacksdk on every call."""

    served: ServedCloud

    def __post_init__(self) -> None:
        self.conn = self.served.connect()

    def servers(self) -> dict[str, Any]:
        """name -> server (all projects, details)."""
        return {s.name: s for s in self.conn.compute.servers(details=True, all_projects=True)}

    def where(self) -> dict[str, str]:
        """name -> compute host."""
        return {name: s.compute_host for name, s in self.servers().items()}

    def statuses(self) -> dict[str, str]:
        """name -> status."""
        return {name: s.status for name, s in self.servers().items()}

    def services(self) -> dict[str, Any]:
        """compute host -> its nova-compute service."""
        return {s.host: s for s in self.conn.compute.services(binary="nova-compute")}

    def migrations(self, server_id: str) -> list[Any]:
        """The live-migration records of a server, newest first."""
        found = [m for m in self.conn.compute.migrations(instance_uuid=server_id)
                 if m.migration_type == "live-migration"]
        return sorted(found, key=lambda m: m.created_at, reverse=True)

    def usages(self) -> dict[str, dict[str, int]]:
        """resource provider name -> Placement usages."""
        out = {}
        for rp in self.conn.placement.resource_providers():
            body = self.conn.placement.get(f"/resource_providers/{rp.id}/usages").json()
            out[rp.name] = body["usages"]
        return out

    def power(self) -> dict[str, str]:
        """host -> 'on' | 'off', from the BMCs' side (the served process)."""
        return {h: s["power"] for h, s in self.served.state()["hosts"].items()}

    def force_complete(self, server_id: str) -> None:
        """Force-complete the server's running live migration, as an operator would, and wait
        until Nova says it completed."""
        record = self.migrations(server_id)[0]
        self.conn.compute.post(f"/servers/{server_id}/migrations/{record.id}/action",
                               json={"force_complete": None}, microversion="2.22")
        self.wait(lambda: self.migrations(server_id)[0].status == "completed",
                  "the forced migration to complete")

    def wait(self, predicate: Any, what: str, timeout: float = PATIENCE_S) -> Any:
        """Poll until predicate() holds (Nova's view is read afresh each time); what it
        returned then."""
        return wait_until(predicate, what, timeout, interval=0.5)


def run_in_background(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    """Start a consolidator command without waiting for it."""
    return subprocess.Popen([*_consolidator(), *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
