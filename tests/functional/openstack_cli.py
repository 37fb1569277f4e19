"""Run the real `openstack` command (python-openstackclient) with consolidator's plugin.

The plugin is found through the entry points setup.cfg declares. An installed consolidator
(`pip install -e .`) already has them; when the installed metadata is older than setup.cfg
(an editable install made before the plugin existed) a dist-info holding setup.cfg's
entry points is written to a folder put on PYTHONPATH, so the test runs what setup.cfg
declares, never a copy of it."""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The entry point groups of the plugin.
GROUPS = ("openstack.cli.extension", "openstack.consolidation.v1")


def installed() -> bool:
    """Whether the installed metadata already registers the plugin."""
    return any(ep.name == "consolidation"
               for ep in metadata.entry_points(group="openstack.cli.extension"))


def entry_points_dir(folder: Path) -> Path:
    """A folder with a dist-info that registers setup.cfg's OSC entry points."""
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    found = config["options.entry_points"]
    info = folder / "consolidator_osc_entry_points-0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\n"
                                   "Name: consolidator-osc-entry-points\nVersion: 0\n")
    text = "".join(f"[{group}]\n{found[group].strip()}\n\n" for group in GROUPS)
    (info / "entry_points.txt").write_text(text)
    return folder


@dataclass
class Done:
    code: int
    out: str
    err: str


@dataclass
class OpenStack:
    """`openstack ARGS` with a clouds.yaml and one of its clouds."""

    clouds_yaml: Path
    cloud: str
    extra_path: Path | None

    def __call__(self, *args: str, cloud: str | None = None, timeout: float = 300) -> Done:
        exe = Path(sys.executable).with_name("openstack")
        paths = [str(ROOT), *([str(self.extra_path)] if self.extra_path else [])]
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("OS_")},
               "PYTHONPATH": os.pathsep.join(paths),
               "OS_CLIENT_CONFIG_FILE": str(self.clouds_yaml),
               "OS_CLOUD": cloud or self.cloud,
               "XDG_CACHE_HOME": str(self.clouds_yaml.parent / "cache")}
        done = subprocess.run([str(exe), *args], capture_output=True, text=True, env=env,
                              timeout=timeout)
        return Done(done.returncode, done.stdout, done.stderr)


def openstack(clouds_yaml: Path, cloud: str, tmp_path: Path) -> OpenStack:
    extra = None if installed() else entry_points_dir(tmp_path / "entry-points")
    return OpenStack(clouds_yaml, cloud, extra)
