"""Reading usage traces and host-model files for 'consolidator simulate trace'.

- A PlanetLab folder: one file per VM, one integer CPU percentage per line (5-minute steps);
  the VMs take CloudSim's four types in sorted file-name order. The ten days CloudSim ships
  are bundled (consolidator/data/planetlab/DAY.tar.xz, see its README.rst) and load by name.
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
import re
import tarfile
from importlib.resources import files
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from consolidator.core.errors import (
    ConsolidatorError,
    MissingFileError,
    ModelError,
    TraceFileError,
    UsageError,
    not_utf8_text,
)
from consolidator.core.replay.datacentre import DataCentre, HostModel
from consolidator.core.replay.trace import Trace, with_cloudsim_types

#: A bundled day's name: its date, as CloudSim's folders name it.
_DAY = re.compile(r"^\d{8}$")


def bundled_folder() -> Path:
    """Where the bundled PlanetLab days are (one DAY.tar.xz each)."""
    return Path(str(files("consolidator") / "data" / "planetlab"))


def bundled_days() -> list[str]:
    """The PlanetLab days bundled with the package, in date order."""
    return sorted(p.name[:-len(".tar.xz")] for p in bundled_folder().glob("*.tar.xz"))


def unreadable(path: str | Path, exc: OSError | UnicodeDecodeError) -> ConsolidatorError:
    """A file that could not be read: missing (exit 2), not UTF-8 or another reason (1)."""
    if isinstance(exc, UnicodeDecodeError):
        return TraceFileError(not_utf8_text(path, exc))
    kind = MissingFileError if isinstance(exc, FileNotFoundError) else TraceFileError
    return kind(f"{path}: {exc.strerror or exc}")


def read_text(path: str | Path) -> str:
    """A trace's or host-model file's UTF-8 text; unreadable()'s error in one line."""
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise unreadable(path, exc) from None


def load_planetlab(source: str | Path, *, vms: int | None = None) -> Trace:
    """A PlanetLab day (the first `vms` files in sorted order, or all): a folder of files,
    or a bundled day by its name (20110303)."""
    root = Path(source)
    if not root.is_dir():
        if _DAY.match(str(source)) and str(source) in bundled_days():
            return _planetlab_rows(str(source), _bundled_files(str(source)), vms)
        days = ", ".join(bundled_days())
        raise UsageError(f"{source}: not a folder of PlanetLab files nor a bundled day: give a "
                         f"folder, or one of {days}")
    names = sorted(p.name for p in root.iterdir() if p.is_file())
    texts: dict[str, str] = {}
    for name in names[:vms]:
        try:
            texts[name] = (root / name).read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise unreadable(root / name, exc) from None
        except OSError as exc:
            raise TraceFileError(f"{root / name}: not a PlanetLab file ({exc})") from None
    return _planetlab_rows(str(source), texts, vms)


def _bundled_files(day: str) -> dict[str, str]:
    """A bundled day's files: name -> text."""
    with tarfile.open(bundled_folder() / f"{day}.tar.xz") as archive:
        found = {}
        for member in archive.getmembers():
            reader = archive.extractfile(member) if member.isfile() else None
            if reader is not None:
                found[member.name.rsplit("/", 1)[-1]] = reader.read().decode()
    return found


def _planetlab_rows(where: str, texts: dict[str, str], vms: int | None) -> Trace:
    """The trace of a day's files (name -> text), in sorted file-name order."""
    names = sorted(texts)[:vms]
    if not names:
        raise TraceFileError(f"{where}: no PlanetLab files in it")
    rows = []
    for name in names:
        try:
            rows.append([float(line) for line in texts[name].split()])
        except ValueError as exc:
            raise TraceFileError(f"{where}/{name}: not a PlanetLab file ({exc})") from None
    if len({len(r) for r in rows}) != 1:
        raise TraceFileError(f"{where}: the files have different numbers of samples")
    try:
        return with_cloudsim_types(names, np.array(rows))
    except ModelError as exc:
        raise TraceFileError(f"{where}: {exc}") from None


def load_trace_file(path: str | Path) -> Trace:
    """A trace file in CSV or JSON (by its suffix)."""
    p = Path(path)
    text = read_text(p)
    try:
        if not text.strip():
            raise ValueError("the file is empty")
        step, rows = _json_rows(text) if p.suffix.lower() == ".json" else _csv_rows(text)
        if not rows:
            raise ValueError("it lists no instances")
        if len({len(r[3]) for r in rows}) != 1:
            raise ValueError("every instance needs the same number of CPU samples")
        return Trace(tuple(r[0] for r in rows), np.array([r[3] for r in rows]) / 100.0,
                     np.array([r[1] for r in rows]), np.array([r[2] for r in rows]), step)
    except (ValueError, ModelError) as exc:
        raise TraceFileError(f"{path}: not a trace file: {exc}") from None


_Row = tuple[str, float, float, list[float]]


def _number(value: Any, what: str) -> float:
    """A number of the trace; ValueError naming what it is."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{what} is not a number ({value!r})")
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{what} is not a number ({value!r})") from None


def _json_rows(text: str) -> tuple[float, list[_Row]]:
    """step_s and the rows of a JSON trace: {"step_s": 300, "instances": [...]}."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("instances"), list):
        raise ValueError('expected {"step_s": 300, "instances": [...]}')
    rows = []
    for i, entry in enumerate(doc["instances"], 1):
        if not isinstance(entry, dict):
            raise ValueError(f"instance {i} is not a mapping")
        missing = [k for k in ("name", "mips", "cpu") if k not in entry]
        if missing:
            raise ValueError(f"instance {i} has no {missing[0]!r}")
        name = str(entry["name"])
        if not isinstance(entry["cpu"], list):
            raise ValueError(f"instance {name!r}: cpu is not a list of percentages")
        rows.append((name, _number(entry["mips"], f"instance {name!r}: mips"),
                     _number(entry.get("ram_mb", 1024), f"instance {name!r}: ram_mb"),
                     [_number(x, f"instance {name!r}: CPU sample {k}")
                      for k, x in enumerate(entry["cpu"], 1)]))
    return _number(doc.get("step_s", 300), "step_s"), rows


def _csv_rows(text: str) -> tuple[float, list[_Row]]:
    """The rows of a CSV trace: a header name,mips,ram_mb,cpu,..., a row per instance."""
    reader = csv.reader(text.splitlines())
    header = [h.strip() for h in next(reader)]
    if header[:3] != ["name", "mips", "ram_mb"]:
        raise ValueError("the header must start name,mips,ram_mb")
    rows = []
    for line, r in enumerate(reader, 2):
        if not r:
            continue
        if len(r) != len(header):
            raise ValueError(f"line {line} has {len(r)} fields, the header {len(header)}")
        name = r[0]
        rows.append((name, _number(r[1], f"line {line}: mips"),
                     _number(r[2], f"line {line}: ram_mb"),
                     [_number(x, f"line {line}: CPU sample {k}")
                      for k, x in enumerate(r[3:], 1)]))
    return 300.0, rows


def load_host_models(path: str | Path) -> DataCentre:
    """A data centre from a host-model file."""
    text = read_text(path)
    try:
        doc: Any = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise TraceFileError(f"{path}: not YAML or JSON ({exc})") from None
    try:
        counts = [(HostModel(str(m["name"]), int(m["cores"]), float(m["mips"]),
                             int(m.get("memory_mb", 0)), tuple(float(w) for w in m["watts"])),
                   int(m["count"])) for m in doc["models"]]
        return DataCentre.of(counts, interleave=bool(doc.get("interleave", True)),
                             cpu_allocation_ratio=float(doc.get("cpu_allocation_ratio", 4.0)),
                             ram_binds=bool(doc.get("ram_binds", False)))
    except (KeyError, TypeError, ValueError) as exc:
        raise TraceFileError(f"{path}: not a host-model file (missing or bad {exc})") from None
    except ConsolidatorError as exc:
        raise TraceFileError(f"{path}: {exc}") from None
