"""tools/scenarios/generate.py writes the benchmarks' clusters as scenario files that plan."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from consolidator.scenario.files import load_cluster

TOOL = Path(__file__).resolve().parents[2] / "tools" / "scenarios" / "generate.py"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True,
                          check=False)


@pytest.mark.parametrize(("shape", "models"), [("four-sizes", 4), ("identical", 1)])
def test_a_generated_file_loads_with_the_shape_asked(tmp_path: Path, shape: str,
                                                     models: int) -> None:
    out = tmp_path / f"{shape}.yaml"
    proc = run("--hosts", "40", "--shape", shape, "--seed", "2", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    cluster = load_cluster(out)
    assert len(cluster.hosts) == 40
    assert len({(h.vcpus, h.memory_mb, h.disk_gb) for h in cluster.hosts}) == models
    assert len(cluster.instances) > 40                # several instances a host
    again = tmp_path / "again.yaml"
    assert run("--hosts", "40", "--shape", shape, "--seed", "2", "-o", str(again)).returncode == 0
    assert again.read_text() == out.read_text()      # deterministic for a seed


def test_an_unwritable_output_is_one_line_and_exit_1(tmp_path: Path) -> None:
    proc = run("--hosts", "3", "-o", str(tmp_path / "missing" / "x.yaml"))
    assert proc.returncode == 1
    assert proc.stderr.strip().startswith("generate: ") and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_bad_host_count_is_refused() -> None:
    proc = run("--hosts", "0")
    assert proc.returncode == 2 and "--hosts 0" in proc.stderr
