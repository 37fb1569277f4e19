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
