"""Scenario files (YAML or JSON): read into a Cluster, and written back from one.

The format is the contract of DESIGN.md section 3. Errors name the file, the entry and the key.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from consolidator.core.errors import MissingScenarioFile, ModelError, ScenarioError
from consolidator.core.model import Cluster, Host, Instance, ServerGroup, stable_uuid
from consolidator.core.names import LARGEST_INTEGER, quoted, unsafe_character
from consolidator.scenario import cache as scenario_cache
from consolidator.scenario import yaml_loader

#: Top-level keys other than hosts/instances/server_groups, kept for the fake cloud.
EXTRA_KEYS = ("name", "faults", "settings")

_HOST_REQUIRED = {"name": str, "vcpus": int, "memory_mb": int, "disk_gb": int}
_HOST_OPTIONAL = {
    "cpu_allocation_ratio": float, "ram_allocation_ratio": float,
    "disk_allocation_ratio": float, "reserved_vcpus": int, "reserved_memory_mb": int,
    "reserved_disk_gb": int, "availability_zone": str, "status": str, "state": str,
    "power": str, "disabled_reason": str, "compute_host": str, "id": str, "bmc": dict,
    "aggregates": list, "resources": dict, "traits": list, "idle_watts": float,
    "peak_watts": float, "cpu_speed": float,
}
_INSTANCE_REQUIRED = {"name": str, "host": str, "vcpus": int, "memory_mb": int, "disk_gb": int}
_INSTANCE_OPTIONAL = {
    "status": str, "metadata": dict, "id": str, "project_id": str, "flavor": str,
    "flavor_extra_specs": dict, "usage": dict, "resources": dict, "traits": dict,
}
#: The values of an instance's traits: mapping (as a flavor's trait:NAME extra specs).
TRAIT_POLICIES = ("required", "forbidden")
_GROUP_REQUIRED = {"name": str, "policy": str, "members": list}
_GROUP_OPTIONAL = {"id": str}


@dataclasses.dataclass(frozen=True)
class Scenario:
    """A parsed scenario: the cluster and the extra top-level keys (faults, settings)."""

    cluster: Cluster
    extras: Mapping[str, Any]


def read_document(path: str | Path) -> dict[str, Any]:
    """Parse a YAML or JSON file into a mapping; errors name the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise MissingScenarioFile(f"{path}: no such file") from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{path}: not UTF-8 text (byte {exc.start}): expected YAML or "
                            f"JSON") from None
    except OSError as exc:
        raise ScenarioError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        doc = json.loads(text) if path.suffix.lower() == ".json" else _load_yaml(text)
    except json.JSONDecodeError as exc:
        raise ScenarioError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ScenarioError(f"{path}: invalid YAML{where}: {problem}") from None
    if not isinstance(doc, dict):
        raise ScenarioError(f"{path}: expected a mapping with a 'hosts' key at the top level")
    return doc


def _load_yaml(text: str) -> Any:
    """YAML text parsed from libyaml's events, or read from the cache of parsed scenarios."""
    doc = scenario_cache.cached(text)
    if doc is None:
        doc = yaml_loader.load(text)
        scenario_cache.store(text, doc)
    return doc


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario file."""
    return parse_scenario(read_document(path), str(path))


def load_cluster(path: str | Path) -> Cluster:
    """Read a scenario file and return only its cluster."""
    return load_scenario(path).cluster


def parse_scenario(doc: Mapping[str, Any], source: str = "<scenario>") -> Scenario:
    """Validate a parsed scenario document and build its Cluster."""
    allowed = {"hosts", "instances", "server_groups", *EXTRA_KEYS}
    for key in doc:
        if key not in allowed:
            raise ScenarioError(f"{source}: unknown top-level key {key!r} "
                                f"(expected one of {', '.join(sorted(allowed))})")
    if "hosts" not in doc:
        raise ScenarioError(f"{source}: missing key 'hosts'")
    hosts = [_build(source, "hosts", i,
                    _entry(source, "hosts", i, e, _HOST_REQUIRED, _HOST_OPTIONAL), Host)
             for i, e in enumerate(_list(source, doc, "hosts"))]
    raw_instances = _list(source, doc, "instances")
    instances = []
    names: dict[str, str] = {}
    for i, entry in enumerate(raw_instances):
        fields = _entry(source, "instances", i, entry, _INSTANCE_REQUIRED, _INSTANCE_OPTIONAL)
        _traits_as_extra_specs(source, i, fields)
        instance = _build(source, "instances", i, fields, Instance)
        if instance.name in names:
            raise ScenarioError(f"{source}: instances[{i}] ({instance.name}): "
                                f"duplicate instance name {instance.name!r}")
        names[instance.name] = instance.id
        instances.append(instance)
    ids = {inst.id for inst in instances}
    groups = []
    for i, entry in enumerate(_list(source, doc, "server_groups")):
        fields = _entry(source, "server_groups", i, entry, _GROUP_REQUIRED, _GROUP_OPTIONAL)
        members = []
        for member in fields["members"]:
            member = str(member)
            if member in names:
                members.append(names[member])
            elif member in ids:
                members.append(member)
            else:
                raise ScenarioError(f"{source}: server_groups[{i}] ({fields['name']}): "
                                    f"key 'members': {member!r} is not a known instance")
        fields["members"] = tuple(members)
        groups.append(_build(source, "server_groups", i, fields, ServerGroup))
    try:
        cluster = Cluster(hosts=tuple(hosts), instances=tuple(instances),
                          server_groups=tuple(groups))
    except ModelError as exc:
        raise ScenarioError(f"{source}: {exc}") from None
    extras = {k: doc[k] for k in EXTRA_KEYS if k in doc}
    return Scenario(cluster=cluster, extras=extras)


def _traits_as_extra_specs(source: str, index: int, fields: dict[str, Any]) -> None:
    """An instance's traits: {NAME: required|forbidden} become trait:NAME extra specs."""
    traits = fields.pop("traits", None) or {}
    specs = dict(fields.get("flavor_extra_specs") or {})
    for name, policy in traits.items():
        if str(policy).lower() not in TRAIT_POLICIES:
            raise ScenarioError(f"{source}: instances[{index}] ({fields['name']}): traits "
                                f"{name}: expected required or forbidden, got {policy!r}")
        specs[f"trait:{name}"] = str(policy).lower()
    if traits:
        fields["flavor_extra_specs"] = specs


def _list(source: str, doc: Mapping[str, Any], key: str) -> list[Any]:
    value = doc.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise ScenarioError(f"{source}: key {key!r} must be a list, got {type(value).__name__}")
    return value


def _entry(source: str, section: str, index: int, entry: Any,
           required: Mapping[str, type], optional: Mapping[str, type]) -> dict[str, Any]:
    """Check one entry's keys and types; return its fields ready for the dataclass."""
    if not isinstance(entry, dict):
        raise ScenarioError(f"{source}: {section}[{index}]: expected a mapping, "
                            f"got {type(entry).__name__}")
    label = f"{source}: {section}[{index}]"
    if isinstance(entry.get("name"), str):
        label += f" ({quoted(entry['name'])})"
    for key in required:
        if key not in entry:
            raise ScenarioError(f"{label}: missing key {key!r}")
    fields: dict[str, Any] = {}
    for key, value in entry.items():
        kind = required.get(key) or optional.get(key)
        if kind is None:
            raise ScenarioError(f"{label}: unknown key {key!r}")
        if type(value) is kind and kind in _PLAIN:      # already right (bool is not int here)
            fields[key] = value
        else:
            fields[key] = _coerce(label, key, value, kind)
        _check_value(label, key, fields[key])
    return fields


def _check_value(label: str, key: str, value: Any) -> None:
    """Refuse, naming the key, a number out of the range the cloud can hold or a name (or
    any text within) holding a control or format character."""
    if isinstance(value, bool):
        return
    if isinstance(value, int) and value > LARGEST_INTEGER:
        shown = value if value.bit_length() <= 64 else f"a {value.bit_length()}-bit integer"
        raise ScenarioError(f"{label}: key {key!r} must be an integer from 0 to "
                            f"{LARGEST_INTEGER} (Placement's range), got {shown}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ScenarioError(f"{label}: key {key!r} must be a finite number, got {value}")
    if isinstance(value, str):
        bad = unsafe_character(value)
        if bad:
            raise ScenarioError(f"{label}: key {key!r} holds the control character {bad}: "
                                f"remove it")
    elif isinstance(value, Mapping):
        for inner, item in value.items():
            _check_value(label, f"{key}.{quoted(str(inner))}", str(inner))
            _check_value(label, f"{key}.{quoted(str(inner))}", item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _check_value(label, key, item)


def _coerce(label: str, key: str, value: Any, kind: type) -> Any:
    if key in ("aggregates", "traits") and kind is list:
        return _names(label, key, value)
    if value is None and key in ("idle_watts", "peak_watts"):
        return None
    if value is None and kind in (str, dict) and key not in ("name", "host", "policy"):
        return None if key in ("disabled_reason", "bmc", "usage") else kind()
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:
            raise ScenarioError(f"{label}: key {key!r} must be a finite number, got a "
                                f"{value.bit_length()}-bit integer") from None
    if kind is str and key in ("power",) and isinstance(value, bool):
        return "on" if value else "off"   # YAML 1.1 reads a bare on/off as a boolean
    if kind is dict and isinstance(value, dict):
        return {str(k): v for k, v in value.items()}
    if not isinstance(value, kind) or isinstance(value, bool):
        raise ScenarioError(f"{label}: key {key!r} must be {_KIND_NAMES[kind]}, "
                            f"got {value!r}")
    return value


def _names(label: str, key: str, value: Any) -> tuple[str, ...]:
    """A list of non-empty strings (None is an empty list)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ScenarioError(f"{label}: key {key!r} must be a list of names, got {value!r}")
    return tuple(value)


#: The kinds a value of exactly that type passes unchanged through _coerce.
_PLAIN = (int, float, str)
_KIND_NAMES = {int: "an integer", float: "a number", str: "a string", dict: "a mapping",
               list: "a list"}


def _build(source: str, section: str, index: int, fields: dict[str, Any], cls: type) -> Any:
    try:
        return cls(**fields)
    except ModelError as exc:
        raise ScenarioError(f"{source}: {section}[{index}]: {exc}") from None


def cluster_to_document(cluster: Cluster, extras: Mapping[str, Any] | None = None, *,
                        full: bool = False) -> dict[str, Any]:
    """The scenario document of a cluster; it loads back into an equal cluster.

    By default fields at their defaults are left out; full=True writes every field.
    """
    names = [i.name for i in cluster.instances]
    by_name = len(set(names)) == len(names)
    name_of = {i.id: i.name for i in cluster.instances}
    doc: dict[str, Any] = dict(extras or {})
    doc["hosts"] = [_fields(h, full, {"compute_host": h.name,
                                      "id": stable_uuid("host", h.name)})
                    for h in cluster.hosts]
    doc["instances"] = [_fields(i, full, {"id": stable_uuid("instance", i.name)})
                        for i in cluster.instances]
    if cluster.server_groups or full:
        doc["server_groups"] = [
            {**_fields(g, full, {"id": stable_uuid("server_group", g.name)}),
             "members": [name_of[m] if by_name else m for m in g.members]}
            for g in cluster.server_groups]
    return doc


def _fields(obj: Any, full: bool, derived: Mapping[str, Any]) -> dict[str, Any]:
    """The dataclass fields of obj (all, or those that differ from defaults), in order."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if full:
            out[f.name] = _plain(value)
            continue
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = dataclasses.MISSING
        if value == default or (f.name in derived and value == derived[f.name]):
            continue
        out[f.name] = _plain(value)
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, tuple):
        return list(value)
    return value


def dump_document(doc: Mapping[str, Any], path: str | Path | None = None,
                  fmt: str | None = None) -> str:
    """Serialise a scenario document as YAML (default) or JSON; write it if a path is given."""
    if fmt is None:
        fmt = "json" if path is not None and str(path).lower().endswith(".json") else "yaml"
    if fmt == "json":
        text = json.dumps(doc, indent=2) + "\n"
    else:
        text = yaml.safe_dump(dict(doc), sort_keys=False, default_flow_style=None, width=100)
    if path is not None:
        target = Path(path)
        tmp = target.with_name(target.name + ".tmp")
        try:
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(target)
        except OSError as exc:
            raise ScenarioError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return text
