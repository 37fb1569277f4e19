"""Small defects issue 27 found walking the README and the operator guide from a clone."""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_bundled_scenario_survives_copying_etc(tmp_path: Path) -> None:
    """etc/consolidator/scenarios/alto-cloud.yaml was a relative symlink: copying etc/ (as
    'cp -r etc /somewhere', symlinks kept) left it dangling."""
    copied = tmp_path / "etc"
    shutil.copytree(ROOT / "etc", copied, symlinks=True)
    scenario = copied / "consolidator" / "scenarios" / "alto-cloud.yaml"
    assert scenario.is_file() and not scenario.is_symlink()
    assert scenario.read_bytes() == (ROOT / "consolidator" / "data" / "alto-cloud.yaml"
                                     ).read_bytes()



def test_the_nova_demo_does_not_call_its_cloud_fake_keystone() -> None:
    """--backend nova's heading said 'fake Keystone, Nova and Placement'."""
    from consolidator.demo import cloud_heading

    assert not cloud_heading("nova").startswith("fake")
    assert cloud_heading("nova").startswith("real Nova and Placement")
    assert cloud_heading("fake") == "fake Keystone, Nova and Placement"


def test_the_real_nova_boot_says_how_it_goes(tmp_path: Path) -> None:
    """--backend nova was silent for about 300 s while it booted 203 servers."""
    from consolidator.demo import relay_progress
    from consolidator.emulators.realnova.progress import BootProgress

    said: list[str] = []
    now = [0.0]
    progress = BootProgress(203, said.append, every=60.0, clock=lambda: now[0])
    for booted in range(1, 204):
        now[0] = booted * 1.5
        progress(booted)
    assert said[0] == "booted 20 of 203 servers (30 s)"
    assert said[-1] == "booted 200 of 203 servers (300 s)"
    assert len(said) == 10
    log = tmp_path / "fake-cloud.log"
    log.write_text("nova control plane and 11 nova-compute services up in 9.0 s\n"
                   "some INFO line\nbooted 20 of 203 servers (30 s)\n")
    shown: list[str] = []
    assert relay_progress(log, 0, shown.append) == 3
    assert shown == ["  nova control plane and 11 nova-compute services up in 9.0 s",
                     "  booted 20 of 203 servers (30 s)"]
    assert relay_progress(log, 3, shown.append) == 3 and len(shown) == 2
