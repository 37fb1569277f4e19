"""A snapshot of the real-Nova backend carries the power its emulated BMCs read: the draw
follows the vCPUs Nova's fake hypervisor claimed (IPMI and Redfish)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.realnova.operator import operator_for
from tests.realnova.served import served_nova


def scenario() -> dict:
    """Two hosts of 8 cores, 100 W idle and 300 W peak: one with 4 vCPUs booted, one empty."""
    hosts = [{"name": name, "vcpus": 8, "memory_mb": 16384, "disk_gb": 200,
              "idle_watts": 100, "peak_watts": 300, "bmc": {"driver": driver}}
             for name, driver in (("e1", "ipmi"), ("e2", "redfish"))]
    instances = [{"name": "vm1", "host": "e1", "vcpus": 4, "memory_mb": 1024,
                  "disk_gb": 10}]
    return {"hosts": hosts, "instances": instances}


def test_snapshot_on_real_nova_carries_measured_watts(tmp_path: Path) -> None:
    with served_nova(scenario(), tmp_path) as served:
        op = operator_for(served, tmp_path)
        snapshot_id = op.ok("snapshot").out.strip()
        shown = json.loads(op.ok("snapshots", "show", snapshot_id, "--format", "json").out)
    watts = {r["host"]: r["watts"] for r in shown["power_readings"]}
    assert watts["e1"] == pytest.approx(200, abs=1)  # half of its cores claimed
    assert watts["e2"] == pytest.approx(100, abs=1)  # idle
