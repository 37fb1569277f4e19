"""The pure cluster model: hosts, instances, server groups, and NumPy views of them.

Nothing here does I/O. Capacity follows Placement: (total - reserved) x allocation_ratio.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from consolidator.core.errors import ModelError

#: The first three columns of the capacity and demand arrays, in column order.
RESOURCES: tuple[str, ...] = ("vcpus", "memory_mb", "disk_gb")
#: Placement's resource classes of those three columns. A cluster whose hosts or instances
#: name other classes (PCPU, VGPU, CUSTOM_*) has one more column for each, sorted by name.
CLASSIC_CLASSES: tuple[str, ...] = ("VCPU", "MEMORY_MB", "DISK_GB")
#: What a resource provider inventory holds for one class, with Placement's defaults.
INVENTORY_DEFAULTS: dict[str, float] = {"reserved": 0, "allocation_ratio": 1.0, "min_unit": 1,
                                        "step_size": 1}
_CLASS_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")

POLICIES = ("affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity")
HARD_POLICIES = ("affinity", "anti-affinity")
SERVICE_STATUSES = ("enabled", "disabled")
SERVICE_STATES = ("up", "down")
POWER_STATES = ("on", "off", "unknown")

_NAMESPACE = uuid.UUID("6f0c5a8e-3f0b-4a8e-9a57-2f1f7cbb8a10")
_NAMESPACE_BYTES = _NAMESPACE.bytes


def stable_uuid(kind: str, name: str) -> str:
    """A deterministic UUID for an entry that has none (scenario files): uuid5's, computed
    without building UUID objects (a scenario of 100,000 instances asks for as many)."""
    digest = bytearray(hashlib.sha1(_NAMESPACE_BYTES + f"{kind}:{name}".encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50          # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80          # RFC 4122 variant
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _check_non_negative(what: str, values: Mapping[str, float]) -> None:
    for key, value in values.items():
        if value is None or value < 0:
            raise ModelError(f"{what}: {key} must be a non-negative number, got {value!r}")


def _check_watts(what: str, idle: float | None, peak: float | None) -> None:
    for key, value in (("idle_watts", idle), ("peak_watts", peak)):
        if value is not None and value < 0:
            raise ModelError(f"{what}: {key} must be a non-negative number, got {value!r}")
    if idle is not None and peak is not None and peak < idle:
        raise ModelError(f"{what}: peak_watts ({peak:g}) must not be below idle_watts "
                         f"({idle:g})")


@dataclass(frozen=True)
class Host:
    """A compute host: one hypervisor, its nova-compute service, power state and aggregates."""

    name: str
    vcpus: int
    memory_mb: int
    disk_gb: int
    cpu_allocation_ratio: float = 1.0
    ram_allocation_ratio: float = 1.0
    disk_allocation_ratio: float = 1.0
    reserved_vcpus: int = 0
    reserved_memory_mb: int = 0
    reserved_disk_gb: int = 0
    availability_zone: str = "nova"
    status: str = "enabled"
    state: str = "up"
    power: str = "on"
    disabled_reason: str | None = None
    compute_host: str = ""
    id: str = ""
    bmc: Mapping[str, object] | None = None
    aggregates: tuple[str, ...] = ()
    #: Inventories of the classes beyond VCPU, MEMORY_MB and DISK_GB (PCPU, VGPU, CUSTOM_*),
    #: each {total, reserved, allocation_ratio, min_unit, max_unit, step_size}.
    resources: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    #: The traits of the host's resource providers (its root and nested ones).
    traits: tuple[str, ...] = ()
    #: Emulated BMCs only (scenario files): the draw in watts at no load and at full load.
    idle_watts: float | None = None
    peak_watts: float | None = None
    #: Relative CPU speed (1.0: the reference hardware): usage measured on this host counts
    #: usage x cpu_speed reference cores (core/cpu_speed.py).
    cpu_speed: float = 1.0

    def __post_init__(self) -> None:
        what = f"host {self.name!r}"
        if self.cpu_speed is None or not self.cpu_speed > 0 or self.cpu_speed == float("inf"):
            raise ModelError(f"{what}: cpu_speed must be a positive number, got "
                             f"{self.cpu_speed!r}")
        if not self.name:
            raise ModelError("host: name must not be empty")
        _check_non_negative(what, {
            "vcpus": self.vcpus, "memory_mb": self.memory_mb, "disk_gb": self.disk_gb,
            "reserved_vcpus": self.reserved_vcpus,
            "reserved_memory_mb": self.reserved_memory_mb,
            "reserved_disk_gb": self.reserved_disk_gb,
        })
        _check_watts(what, self.idle_watts, self.peak_watts)
        for key in ("cpu_allocation_ratio", "ram_allocation_ratio", "disk_allocation_ratio"):
            value = getattr(self, key)
            if value is None or value <= 0:
                raise ModelError(f"{what}: {key} must be positive, got {value!r}")
        _check_choice(what, "status", self.status, SERVICE_STATUSES)
        _check_choice(what, "state", self.state, SERVICE_STATES)
        _check_choice(what, "power", self.power, POWER_STATES)
        if not self.compute_host:
            object.__setattr__(self, "compute_host", self.name)
        if not self.id:
            object.__setattr__(self, "id", stable_uuid("host", self.name))
        object.__setattr__(self, "aggregates", _names(what, "aggregates", self.aggregates))
        object.__setattr__(self, "traits", _names(what, "traits", self.traits))
        object.__setattr__(self, "resources", _inventories(what, self.resources))

    def capacity_of(self, rc: str) -> float:
        """Placement capacity of one extra class: (total - reserved) x allocation ratio."""
        inv = self.resources.get(rc)
        if inv is None:
            return 0.0
        return max(inv["total"] - inv["reserved"], 0) * inv["allocation_ratio"]

    @property
    def capacity(self) -> tuple[float, float, float]:
        """Placement capacity per resource: (total - reserved) x allocation ratio."""
        return (
            max(self.vcpus - self.reserved_vcpus, 0) * self.cpu_allocation_ratio,
            max(self.memory_mb - self.reserved_memory_mb, 0) * self.ram_allocation_ratio,
            max(self.disk_gb - self.reserved_disk_gb, 0) * self.disk_allocation_ratio,
        )

    @property
    def usable(self) -> bool:
        """Whether the host may receive instances: enabled, up and powered on."""
        return self.status == "enabled" and self.state == "up" and self.power != "off"


@dataclass(frozen=True)
class Instance:
    """A Nova server, with the resources its flavor claims on its host."""

    name: str
    host: str
    vcpus: int
    memory_mb: int
    disk_gb: int
    status: str = "ACTIVE"
    metadata: Mapping[str, str] = field(default_factory=dict)
    id: str = ""
    project_id: str = ""
    flavor: str = ""
    flavor_extra_specs: Mapping[str, str] = field(default_factory=dict)
    usage: Mapping[str, float] | None = None
    #: Its Placement allocations per class where they differ from the flavor's vcpus,
    #: memory_mb and disk_gb: a pinned instance holds {PCPU: n, VCPU: 0}, a vGPU one {VGPU: 1}.
    resources: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.name:
            raise ModelError("instance: name must not be empty")
        what = f"instance {self.name!r}"
        _check_non_negative(what, {
            "vcpus": self.vcpus, "memory_mb": self.memory_mb, "disk_gb": self.disk_gb,
        })
        if not self.id:
            object.__setattr__(self, "id", stable_uuid("instance", self.name))
        amounts = {}
        for rc, amount in dict(self.resources).items():
            _check_class(what, rc)
            _check_non_negative(what, {f"resources {rc}": amount})
            amounts[rc] = float(amount)
        object.__setattr__(self, "resources", amounts)

    def amount(self, rc: str) -> float:
        """What it holds of one resource class."""
        if rc in self.resources:
            return self.resources[rc]
        if rc in CLASSIC_CLASSES:
            return float((self.vcpus, self.memory_mb, self.disk_gb)[CLASSIC_CLASSES.index(rc)])
        return 0.0

    @cached_property
    def required_traits(self) -> tuple[str, ...]:
        """Traits its flavor requires (extra spec trait:NAME=required)."""
        return _flavor_traits(self.flavor_extra_specs, "required")

    @cached_property
    def forbidden_traits(self) -> tuple[str, ...]:
        """Traits its flavor forbids (extra spec trait:NAME=forbidden)."""
        return _flavor_traits(self.flavor_extra_specs, "forbidden")

    @property
    def demand(self) -> tuple[float, float, float]:
        """What the instance claims of VCPU, MEMORY_MB and DISK_GB, in RESOURCES order."""
        if not self.resources:
            return (float(self.vcpus), float(self.memory_mb), float(self.disk_gb))
        return (self.amount("VCPU"), self.amount("MEMORY_MB"), self.amount("DISK_GB"))


def _flavor_traits(specs: Mapping[str, str], wanted: str) -> tuple[str, ...]:
    return tuple(sorted(k.split(":", 1)[1] for k, v in specs.items()
                        if k.startswith("trait:") and str(v).strip().lower() == wanted))


def _check_class(what: str, rc: object) -> None:
    if not isinstance(rc, str) or not _CLASS_NAME.match(rc):
        raise ModelError(f"{what}: {rc!r} is not a resource class name (e.g. PCPU, VGPU, "
                         f"CUSTOM_GOLD)")


def _inventories(what: str, resources: Mapping[str, object]) -> dict[str, dict[str, float]]:
    """Extra-class inventories with Placement's defaults; a bare number is the total."""
    out: dict[str, dict[str, float]] = {}
    for rc, raw in dict(resources).items():
        _check_class(what, rc)
        if rc in CLASSIC_CLASSES:
            raise ModelError(f"{what}: resources {rc}: give it as vcpus, memory_mb or disk_gb "
                             f"(with the ratio and reserved keys), not under resources")
        inv = {"total": raw} if isinstance(raw, (int, float)) else dict(raw)  # type: ignore[call-overload]
        unknown = set(inv) - {"total", "max_unit", *INVENTORY_DEFAULTS}
        if unknown or "total" not in inv:
            raise ModelError(f"{what}: resources {rc}: expected total and optionally "
                             f"reserved, allocation_ratio, min_unit, max_unit, step_size")
        full = {**INVENTORY_DEFAULTS, "max_unit": inv["total"], **inv}
        _check_non_negative(f"{what}: resources {rc}", full)
        if full["allocation_ratio"] <= 0 or full["step_size"] <= 0:
            raise ModelError(f"{what}: resources {rc}: allocation_ratio and step_size must be "
                             f"positive")
        out[rc] = {k: float(v) for k, v in full.items()}
    return out


@dataclass(frozen=True)
class ServerGroup:
    """A Nova server group; members are instance ids."""

    name: str
    policy: str
    members: tuple[str, ...] = ()
    id: str = ""

    def __post_init__(self) -> None:
        _check_choice(f"server group {self.name!r}", "policy", self.policy, POLICIES)
        object.__setattr__(self, "members", tuple(self.members))
        if not self.id:
            object.__setattr__(self, "id", stable_uuid("server_group", self.name))

    @property
    def is_hard(self) -> bool:
        """Whether the policy is a hard constraint (never violated)."""
        return self.policy in HARD_POLICIES


def _names(what: str, key: str, values: Iterable[str]) -> tuple[str, ...]:
    """A set of names as a sorted tuple; a bare string or a non-string name is an error."""
    if isinstance(values, str):
        raise ModelError(f"{what}: {key} must be a list of names, got {values!r}")
    names = tuple(values)
    for name in names:
        if not isinstance(name, str) or not name:
            raise ModelError(f"{what}: {key} must hold non-empty strings, got {name!r}")
    return tuple(sorted(set(names)))


def _check_choice(what: str, key: str, value: str, choices: Iterable[str]) -> None:
    choices = tuple(choices)
    if value not in choices:
        raise ModelError(f"{what}: {key} must be one of {', '.join(choices)}, got {value!r}")


@dataclass(frozen=True, eq=False)
class Cluster:
    """Hosts, the instances placed on them and their server groups, validated together."""

    hosts: tuple[Host, ...]
    instances: tuple[Instance, ...] = ()
    server_groups: tuple[ServerGroup, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "hosts", tuple(self.hosts))
        object.__setattr__(self, "instances", tuple(self.instances))
        object.__setattr__(self, "server_groups", tuple(self.server_groups))
        _reject_duplicates("host", [h.name for h in self.hosts])
        _reject_duplicates("instance id", [i.id for i in self.instances])
        _reject_duplicates("server group id", [g.id for g in self.server_groups])
        hosts = self.host_index
        for inst in self.instances:
            if inst.host not in hosts:
                raise ModelError(f"instance {inst.name!r}: host {inst.host!r} is not a known host")
        ids = self.instance_index
        for group in self.server_groups:
            for member in group.members:
                if member not in ids:
                    raise ModelError(
                        f"server group {group.name!r}: member {member!r} is not a known instance"
                    )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Cluster):
            return NotImplemented
        return (self.hosts, self.instances, self.server_groups) == (
            other.hosts, other.instances, other.server_groups)

    __hash__ = None  # type: ignore[assignment]

    @cached_property
    def host_index(self) -> dict[str, int]:
        """Host name -> row in the host arrays."""
        return {h.name: i for i, h in enumerate(self.hosts)}

    @cached_property
    def instance_index(self) -> dict[str, int]:
        """Instance id -> row in the instance arrays."""
        return {inst.id: i for i, inst in enumerate(self.instances)}

    @cached_property
    def instance_hosts(self) -> dict[str, str]:
        """Instance id -> the name of its host (a copy is the checker's starting point)."""
        return {inst.id: inst.host for inst in self.instances}

    @cached_property
    def resource_classes(self) -> tuple[str, ...]:
        """The Placement class of each column: VCPU, MEMORY_MB, DISK_GB, then every other
        class a host or an instance names, sorted."""
        extra = {rc for h in self.hosts for rc in h.resources}
        extra.update(rc for i in self.instances for rc in i.resources)
        return CLASSIC_CLASSES + tuple(sorted(extra - set(CLASSIC_CLASSES)))

    @cached_property
    def capacity(self) -> np.ndarray:
        """(hosts x classes) Placement capacity, float64."""
        arr = np.array([h.capacity for h in self.hosts], dtype=np.float64)
        arr = arr.reshape(len(self.hosts), len(RESOURCES))
        extra = self.resource_classes[len(RESOURCES):]
        if not extra:
            return arr
        more = np.array([[h.capacity_of(rc) for rc in extra] for h in self.hosts],
                        dtype=np.float64).reshape(len(self.hosts), len(extra))
        return np.hstack([arr, more])

    @cached_property
    def demand(self) -> np.ndarray:
        """(instances x classes) demand, float64."""
        arr = np.array([i.demand for i in self.instances], dtype=np.float64)
        arr = arr.reshape(len(self.instances), len(RESOURCES))
        extra = self.resource_classes[len(RESOURCES):]
        if not extra:
            return arr
        more = np.array([[i.amount(rc) for rc in extra] for i in self.instances],
                        dtype=np.float64).reshape(len(self.instances), len(extra))
        return np.hstack([arr, more])

    @cached_property
    def demand_rows(self) -> tuple[tuple[float, ...], ...]:
        """demand as Python floats, one tuple per instance, for loops that read it row by row
        (made once: a plan of 90,000 instances is checked and ordered many times)."""
        return tuple(map(tuple, self.demand.tolist()))

    @cached_property
    def placement(self) -> np.ndarray:
        """Row of each instance's current host in the host arrays."""
        index = self.host_index
        return np.fromiter((index[i.host] for i in self.instances), dtype=np.int64,
                           count=len(self.instances))

    @cached_property
    def usage(self) -> np.ndarray:
        """(hosts x resources) demand currently placed on each host."""
        used = np.zeros_like(self.capacity)
        if len(self.instances):
            np.add.at(used, self.placement, self.demand)
        return used

    @cached_property
    def population(self) -> np.ndarray:
        """Number of instances on each host."""
        return np.bincount(self.placement, minlength=len(self.hosts))

    def instances_on(self, host: str) -> list[Instance]:
        """The instances currently on a host."""
        return [i for i in self.instances if i.host == host]


def _reject_duplicates(what: str, names: list[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ModelError(f"duplicate {what} {name!r}")
        seen.add(name)


def natural_key(name: str) -> list[Any]:
    """Sort key that orders compute-2 before compute-10."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]
