"""The data centre of a trace replay: host models with SPECpower tables, and CloudSim's.

A host model has cores of one speed (MIPS per core), memory, and its power draw at 0, 10, ...
100 % CPU (SPECpower), linear in between. Beloglazov & Buyya (2012, section 7) and CloudSim's
``examples/power`` use 800 hosts, alternating HP ProLiant ML110 G4 and G5.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from consolidator.core.errors import ModelError


@dataclass(frozen=True)
class HostModel:
    """One kind of host: cores x MIPS per core, memory, and its SPECpower table in W."""

    name: str
    cores: int
    mips: float
    memory_mb: int
    watts: tuple[float, ...]

    def __post_init__(self) -> None:
        if self.cores <= 0 or self.mips <= 0 or self.memory_mb < 0:
            raise ModelError(f"host model {self.name!r}: cores and mips must be positive and "
                             f"memory_mb not negative")
        if len(self.watts) != 11 or any(w < 0 for w in self.watts):
            raise ModelError(f"host model {self.name!r}: watts needs 11 non-negative values "
                             f"(0, 10, ... 100 % CPU), got {len(self.watts)}")
        if any(b < a for a, b in zip(self.watts, self.watts[1:], strict=False)):
            raise ModelError(f"host model {self.name!r}: watts must not decrease with load")

    @property
    def capacity(self) -> float:
        """Total MIPS."""
        return self.cores * self.mips


G4 = HostModel("HP ProLiant ML110 G4", 2, 1860.0, 4096,
               (86, 89.4, 92.6, 96, 99.5, 102, 106, 108, 112, 114, 117))
G5 = HostModel("HP ProLiant ML110 G5", 2, 2660.0, 4096,
               (93.7, 97, 101, 105, 110, 116, 121, 125, 129, 133, 135))


@dataclass(frozen=True)
class DataCentre:
    """The hosts of a replay, in order, each of one model.

    cpu_allocation_ratio and ram_allocation_ratio are what the daemon's Placement sees (the
    reference policies pack on used MIPS only, as CloudSim does); ram_binds False means
    running VMs claim no memory, as in CloudSim's PlanetLab runs.
    """

    models: tuple[HostModel, ...]
    host_model: tuple[int, ...]
    cpu_allocation_ratio: float = 4.0
    ram_binds: bool = False

    @classmethod
    def of(cls, counts: Sequence[tuple[HostModel, int]], *, interleave: bool = True,
           cpu_allocation_ratio: float = 4.0, ram_binds: bool = False) -> DataCentre:
        """Hosts of several models; interleaved (G4, G5, G4, ...) or model after model."""
        models = tuple(m for m, _ in counts)
        if not models or any(n < 0 for _, n in counts) or sum(n for _, n in counts) == 0:
            raise ModelError("a data centre needs at least one host")
        if interleave:
            left = [n for _, n in counts]
            order: list[int] = []
            while any(left):
                for i, n in enumerate(left):
                    if n:
                        order.append(i)
                        left[i] -= 1
        else:
            order = [i for i, (_, n) in enumerate(counts) for _ in range(n)]
        return cls(models, tuple(order), cpu_allocation_ratio, ram_binds)

    @cached_property
    def model_index(self) -> np.ndarray:
        """(H,) the model of each host."""
        return np.array(self.host_model, dtype=np.int64)

    @cached_property
    def capacity(self) -> np.ndarray:
        """(H,) MIPS of each host."""
        result: np.ndarray = np.array([m.capacity for m in self.models])[self.model_index]
        return result

    @cached_property
    def core_mips(self) -> np.ndarray:
        """(H,) MIPS of one core of each host."""
        result: np.ndarray = np.array([m.mips for m in self.models])[self.model_index]
        return result

    @cached_property
    def tables(self) -> np.ndarray:
        """(H, 11) each host's power table."""
        result: np.ndarray = np.array([m.watts for m in self.models], dtype=float)[self.model_index]
        return result

    @property
    def hosts(self) -> int:
        """How many hosts."""
        return len(self.host_model)

    @cached_property
    def model_tables(self) -> np.ndarray:
        """(M, 11) each model's power table."""
        return np.array([m.watts for m in self.models], dtype=float)

    def power(self, utilisation: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """Watts of hosts (all, or `rows`) at a CPU utilisation in [0, 1], linear between
        the table's points."""
        model = self.model_index if rows is None else self.model_index[rows]
        u = np.clip(utilisation, 0.0, 1.0) * 10.0
        low = np.minimum(u.astype(np.int64), 9)
        table = self.model_tables
        base = table[model, low]
        result: np.ndarray = base + (table[model, low + 1] - base) * (u - low)
        return result

    @cached_property
    def best_joules_per_mip(self) -> float:
        """The fewest joules per million instructions any host model reaches (the floor's
        efficiency): min over models and loads of watts / MIPS served."""
        best = np.inf
        for m in self.models:
            served = np.arange(1, 11) / 10 * m.capacity
            best = min(best, float(np.min(np.array(m.watts[1:]) / served)))
        return best

    @property
    def full_power_watts(self) -> float:
        """Every host at 100 % CPU."""
        return float(self.tables[:, 10].sum())


def cloudsim_datacentre(hosts: int = 800) -> DataCentre:
    """CloudSim's PlanetLab data centre: `hosts` hosts, G4 and G5 alternating."""
    return DataCentre.of([(G4, (hosts + 1) // 2), (G5, hosts // 2)])
