"""The pure cluster model: hosts, instances, server groups, and NumPy views of them.

Nothing here does I/O. Capacity follows Placement: (total - reserved) x allocation_ratio.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from consolidator.errors import ModelError

#: The resource dimensions of the capacity and demand arrays, in column order.
RESOURCES: tuple[str, ...] = ("vcpus", "memory_mb", "disk_gb")

POLICIES = ("affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity")
HARD_POLICIES = ("affinity", "anti-affinity")
SERVICE_STATUSES = ("enabled", "disabled")
SERVICE_STATES = ("up", "down")
POWER_STATES = ("on", "off", "unknown")

_NAMESPACE = uuid.UUID("6f0c5a8e-3f0b-4a8e-9a57-2f1f7cbb8a10")


def stable_uuid(kind: str, name: str) -> str:
    """A deterministic UUID for an entry that has none (scenario files)."""
    return str(uuid.uuid5(_NAMESPACE, f"{kind}:{name}"))


def _check_non_negative(what: str, values: Mapping[str, float]) -> None:
    for key, value in values.items():
        if value is None or value < 0:
            raise ModelError(f"{what}: {key} must be a non-negative number, got {value!r}")


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

    def __post_init__(self) -> None:
        what = f"host {self.name!r}"
        if not self.name:
            raise ModelError("host: name must not be empty")
        _check_non_negative(what, {
            "vcpus": self.vcpus, "memory_mb": self.memory_mb, "disk_gb": self.disk_gb,
            "reserved_vcpus": self.reserved_vcpus,
            "reserved_memory_mb": self.reserved_memory_mb,
            "reserved_disk_gb": self.reserved_disk_gb,
        })
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

    def __post_init__(self) -> None:
        if not self.name:
            raise ModelError("instance: name must not be empty")
        _check_non_negative(f"instance {self.name!r}", {
            "vcpus": self.vcpus, "memory_mb": self.memory_mb, "disk_gb": self.disk_gb,
        })
        if not self.id:
            object.__setattr__(self, "id", stable_uuid("instance", self.name))

    @property
    def demand(self) -> tuple[float, float, float]:
        """What the instance claims, in the order of RESOURCES."""
        return (float(self.vcpus), float(self.memory_mb), float(self.disk_gb))


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
    def capacity(self) -> np.ndarray:
        """(hosts x resources) Placement capacity, float64."""
        arr = np.array([h.capacity for h in self.hosts], dtype=np.float64)
        return arr.reshape(len(self.hosts), len(RESOURCES))

    @cached_property
    def demand(self) -> np.ndarray:
        """(instances x resources) demand, float64."""
        arr = np.array([i.demand for i in self.instances], dtype=np.float64)
        return arr.reshape(len(self.instances), len(RESOURCES))

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
