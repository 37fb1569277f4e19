"""Run `consolidator fake-cloud serve` in a subprocess: pyghmi client and BMC must not share one."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from consolidator.emulators.fake.process import stop_child
from tests.functional.waits import PATIENCE_S

#: A deadline for the served cloud's start, generous for a loaded machine (it ends as soon as
#: the cloud has written its files).
START_TIMEOUT_S = PATIENCE_S


@dataclass
class ServedCloud:
    """A fake cloud served by a subprocess, and the files that describe it."""

    clouds_yaml: Path
    bmc_yaml: Path | None
    cloud_name: str
    control_url: str
    process: subprocess.Popen[str]

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.control_url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=PATIENCE_S) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def state(self) -> dict[str, Any]:
        """GET /_fake/state: hosts (power, state, status), servers, migrations, faults."""
        return self._call("GET", "/state")

    def add_fault(self, fault: Mapping[str, Any] | list[Mapping[str, Any]]) -> Any:
        """POST /_fake/faults."""
        return self._call("POST", "/faults", fault)

    def clear_faults(self) -> None:
        """DELETE /_fake/faults."""
        self._call("DELETE", "/faults")

    def connect(self) -> Any:
        """An openstacksdk Connection from clouds_yaml, ignoring any other config."""
        import openstack

        entry = yaml.safe_load(self.clouds_yaml.read_text())["clouds"][self.cloud_name]
        return openstack.connect(load_yaml_config=False, load_envvars=False, **entry)


def _consolidator() -> list[str]:
    script = Path(sys.executable).with_name("consolidator")
    return [str(script)] if script.exists() else [sys.executable, "-m", "consolidator"]


@contextmanager
def served_cloud(scenario: Mapping[str, Any] | str | Path, tmp_path: Path, *,
                 bmc: bool = True, cloud_name: str = "fake") -> Iterator[ServedCloud]:
    """Serve a scenario (a document or a file) in a subprocess until the block ends."""
    if isinstance(scenario, Mapping):
        scenario_file = tmp_path / "served-scenario.yaml"
        scenario_file.write_text(yaml.safe_dump(dict(scenario), sort_keys=False))
    else:
        scenario_file = Path(scenario)
    clouds_yaml = tmp_path / "served-clouds.yaml"
    bmc_yaml = tmp_path / "served-bmc.yaml" if bmc else None
    log = tmp_path / "served.log"
    args = [*_consolidator(), "fake-cloud", "serve", "--scenario", str(scenario_file),
            "--write-clouds-yaml", str(clouds_yaml), "--cloud-name", cloud_name]
    if bmc_yaml is not None:
        args += ["--bmc", "--write-bmc-yaml", str(bmc_yaml)]
    with log.open("w") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        wanted = [p for p in (clouds_yaml, bmc_yaml) if p is not None]
        while not all(p.exists() for p in wanted):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"fake-cloud serve did not start:\n{log.read_text()}")
            time.sleep(0.05)
        entry = yaml.safe_load(clouds_yaml.read_text())["clouds"][cloud_name]
        auth_url = entry.get("auth", {}).get("auth_url") or entry["compute_endpoint_override"]
        base = auth_url.split("/", 3)
        yield ServedCloud(clouds_yaml=clouds_yaml, bmc_yaml=bmc_yaml, cloud_name=cloud_name,
                          control_url=f"{base[0]}//{base[2]}/_fake", process=process)
    finally:
        stop_child(process)
