"""The replay's cloud as the daemon sees it: a Cluster of the data centre's hosts and the
trace's VMs, with CPU usage statistics over the samples since the last cycle.

CPU is counted in units of CPU_UNIT_MIPS: a host has cores x MIPS / 100 "vCPUs" (a G5 53, a
G4 37), a VM its MIPS / 100 (25, 20, 10, 5), so that Placement, the ucac capacity model and
the reference policies all count the same MIPS.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from consolidator.core.model import Cluster, Host, Instance
from consolidator.core.replay.datacentre import DataCentre
from consolidator.core.replay.trace import Trace

#: MIPS per vCPU of the replay's cloud.
CPU_UNIT_MIPS = 100.0


def host_name(row: int) -> str:
    """The name of host row `row`."""
    return f"host-{row + 1:04d}"


def host_vcpus(capacity_mips: np.ndarray) -> np.ndarray:
    """The vCPUs of hosts of these MIPS (a G5's 5,320: 53)."""
    result: np.ndarray = np.round(capacity_mips / CPU_UNIT_MIPS).astype(np.int64)
    return result


def vm_vcpus(trace: Trace) -> np.ndarray:
    """(V,) the vCPUs each VM of the trace holds (its MIPS / 100, at least 1)."""
    result: np.ndarray = np.maximum(np.round(trace.mips / CPU_UNIT_MIPS), 1).astype(np.int64)
    return result


def replay_hosts(dc: DataCentre) -> tuple[Host, ...]:
    """The data centre's hosts, all on and enabled."""
    vcpus = host_vcpus(dc.capacity)
    return tuple(Host(name=host_name(h), vcpus=int(vcpus[h]),
                      memory_mb=dc.models[m].memory_mb, disk_gb=0,
                      cpu_allocation_ratio=dc.cpu_allocation_ratio,
                      idle_watts=dc.models[m].watts[0], peak_watts=dc.models[m].watts[-1])
                 for h, m in enumerate(dc.host_model))


def replay_instances(trace: Trace, dc: DataCentre) -> tuple[Instance, ...]:
    """The trace's VMs as instances (no memory claimed unless the data centre says so)."""
    vcpus = vm_vcpus(trace)
    return tuple(Instance(name=name, host=host_name(0), vcpus=int(vcpus[v]),
                          memory_mb=int(trace.ram_mb[v]) if dc.ram_binds else 0, disk_gb=0,
                          flavor=f"{trace.mips[v]:g}-mips")
                 for v, name in enumerate(trace.names))


def usage_window(trace: Trace, first: int, last: int) -> tuple[np.ndarray, np.ndarray]:
    """(V,) mean and standard deviation of each VM's CPU use in vCPUs over samples
    first..last, as telemetry would report them for that window."""
    lo = max(min(first, last), 0)
    window = trace.utilisation[:, lo:last + 1] * (trace.mips / CPU_UNIT_MIPS)[:, None]
    return window.mean(axis=1), window.std(axis=1)


def cluster_at(hosts: tuple[Host, ...], instances: tuple[Instance, ...],
               placement: np.ndarray, host_state: Mapping[int, Host],
               mean: np.ndarray, std: np.ndarray) -> Cluster:
    """The cluster with each VM on its host (a VM on row -1 has ended: it is not in the
    cloud), hosts replaced where host_state says (power, service), and each VM's usage
    statistics."""
    from dataclasses import replace

    now = tuple(host_state.get(h, host) for h, host in enumerate(hosts))
    placed = tuple(replace(inst, host=now[placement[v]].name,
                           usage={"cpu_mean": float(mean[v]), "cpu_std": float(std[v])})
                   for v, inst in enumerate(instances) if placement[v] >= 0)
    return Cluster(hosts=now, instances=placed)
