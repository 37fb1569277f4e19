"""Reading usage traces and host-model files for 'consolidator simulate trace'.

- A PlanetLab folder: one file per VM, one integer CPU percentage per line (5-minute steps);
  the VMs take CloudSim's four types in sorted file-name order.
- A trace file, CSV or JSON, one entry per instance (see docs/replay.rst):
  CSV: a header ``name,mips,ram_mb,cpu...`` then one row per instance: its name, MIPS, RAM in
  MB and its CPU percentages; JSON: ``{"step_s": 300, "instances": [{"name", "mips",
  "ram_mb", "cpu": [percent, ...]}]}``.
- A host-model file, YAML or JSON: ``models: [{name, count, cores, mips, memory_mb, watts:
  [11 values at 0..100 %]}]``, and optional ``interleave``, ``cpu_allocation_ratio``,
  ``ram_binds``.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from consolidator.core.errors import ConsolidatorError, ModelError, UsageError
from consolidator.core.replay.datacentre import DataCentre, HostModel
from consolidator.core.replay.trace import Trace, with_cloudsim_types


def load_planetlab(folder: str | Path, *, vms: int | None = None) -> Trace:
    """A PlanetLab day (the first `vms` files in sorted order, or all)."""
    root = Path(folder)
    if not root.is_dir():
        raise UsageError(f"{folder}: not a folder of PlanetLab files")
    names = sorted(p.name for p in root.iterdir() if p.is_file())[:vms]
    if not names:
        raise UsageError(f"{folder}: no PlanetLab files in it")
    rows = []
    for name in names:
        try:
            values = [float(line) for line in (root / name).read_text().split()]
        except (OSError, ValueError) as exc:
            raise UsageError(f"{root / name}: not a PlanetLab file ({exc})") from None
        rows.append(values)
    if len({len(r) for r in rows}) != 1:
        raise UsageError(f"{folder}: the files have different numbers of samples")
    try:
        return with_cloudsim_types(names, np.array(rows))
    except ModelError as exc:
        raise UsageError(f"{folder}: {exc}") from None


def load_trace_file(path: str | Path) -> Trace:
    """A trace file in CSV or JSON (by its suffix)."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None
    try:
        if p.suffix.lower() == ".json":
            doc = json.loads(text)
            entries = doc["instances"]
            step = float(doc.get("step_s", 300))
            rows = [(str(e["name"]), float(e["mips"]), float(e.get("ram_mb", 1024)),
                     [float(x) for x in e["cpu"]]) for e in entries]
        else:
            reader = csv.reader(text.splitlines())
            header = next(reader)
            if [h.strip() for h in header[:3]] != ["name", "mips", "ram_mb"]:
                raise ValueError("the header must start name,mips,ram_mb")
            step = 300.0
            rows = [(r[0], float(r[1]), float(r[2]), [float(x) for x in r[3:]])
                    for r in reader if r]
        if not rows or len({len(r[3]) for r in rows}) != 1:
            raise ValueError("every instance needs the same number of CPU samples")
        return Trace(tuple(r[0] for r in rows), np.array([r[3] for r in rows]) / 100.0,
                     np.array([r[1] for r in rows]), np.array([r[2] for r in rows]), step)
    except (KeyError, TypeError, ValueError, StopIteration, IndexError,
            json.JSONDecodeError, ModelError) as exc:
        raise UsageError(f"{path}: not a trace file ({exc or type(exc).__name__})") from None


def load_host_models(path: str | Path) -> DataCentre:
    """A data centre from a host-model file."""
    try:
        doc: Any = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise UsageError(f"{path}: not YAML or JSON ({exc})") from None
    try:
        counts = [(HostModel(str(m["name"]), int(m["cores"]), float(m["mips"]),
                             int(m.get("memory_mb", 0)), tuple(float(w) for w in m["watts"])),
                   int(m["count"])) for m in doc["models"]]
        return DataCentre.of(counts, interleave=bool(doc.get("interleave", True)),
                             cpu_allocation_ratio=float(doc.get("cpu_allocation_ratio", 4.0)),
                             ram_binds=bool(doc.get("ram_binds", False)))
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{path}: not a host-model file (missing or bad {exc})") from None
    except ConsolidatorError as exc:
        raise UsageError(f"{path}: {exc}") from None
