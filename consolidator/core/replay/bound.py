"""The allocation floor: the least energy any placement can draw that serves the whole demand
and honours Placement's CPU allocation ratio.

The physical floor (trace.floor_steps) serves the demand at the best efficiency any host
reaches, as if VMs could be split and packed to 100 % CPU. Placement cannot pack so tight: a
host takes VMs only up to its vCPUs x cpu_allocation_ratio, so at a low ratio more hosts must
stay on than the demand needs, each drawing at least its idle power.

At a sample with allocation a (the running VMs' vCPUs) and demand d (MIPS), any set of powered
hosts serving all of d draws P = sum over them of watts(u_h). For any prices lam >= 0 (per
allocated vCPU) and mu >= 0 (per MIPS), weak duality gives

    P >= lam * a + mu * d + sum_m N_m * min(0, min_j (W_mj - lam * A_m - mu * C_m * j / 10))

where a model m has N_m hosts, A_m vCPUs x ratio, C_m MIPS and power table W_mj at j x 10 %
CPU (the minimum over a piecewise-linear table is at one of its points). Every (lam, mu) gives
a true lower bound; this module takes the best over a grid that holds lam = 0 with mu = the best
joules per MIPS, where the bound equals the physical floor, so it is never below it.
"""

from __future__ import annotations

import numpy as np

from consolidator.core.replay.cloud_model import host_vcpus, vm_vcpus
from consolidator.core.replay.datacentre import DataCentre
from consolidator.core.replay.trace import Trace, running_demand

#: Points per axis of the price grid (lam, mu).
GRID = 161


def running_allocation(trace: Trace, ends: np.ndarray | None = None) -> np.ndarray:
    """(T,) the vCPUs Placement holds for the VMs running in each interval (a VM holds its
    vCPUs until its end, as the replay's cloud counts them)."""
    vcpus = vm_vcpus(trace).astype(float)
    if ends is None:
        return np.full(trace.steps, float(vcpus.sum()))
    running = ends[:, None] > np.arange(trace.steps)[None, :]
    result: np.ndarray = (running * vcpus[:, None]).sum(axis=0)
    return result


def _model_terms(dc: DataCentre) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per model: host count, allocatable vCPUs per host, MIPS per host, power table."""
    counts = np.bincount(dc.model_index, minlength=len(dc.models)).astype(float)
    mips = np.array([m.capacity for m in dc.models])
    alloc = host_vcpus(mips) * dc.cpu_allocation_ratio
    return counts, alloc, mips, dc.model_tables


def allocation_floor_watts(dc: DataCentre, allocation: np.ndarray,
                           demand: np.ndarray) -> np.ndarray:
    """(K,) a lower bound on the watts of any powered hosts that hold `allocation` vCPUs and
    serve `demand` MIPS, at each of K samples (see the module's docstring): the best prices
    on a grid, then on a finer grid around each sample's best."""
    terms = _model_terms(dc)
    best = dc.best_joules_per_mip
    lam_step = float(np.max(terms[3][:, -1] / terms[1])) / (GRID - 1)
    mu_step = 2 * best / (GRID - 1)
    lam, mu = np.meshgrid(np.arange(GRID) * lam_step, np.arange(GRID) * mu_step,
                          indexing="ij")
    lam, mu = np.append(lam.ravel(), 0.0), np.append(mu.ravel(), best)
    spare = _spare(terms, lam, mu)
    result = np.empty(len(demand))
    fine = np.linspace(-1.0, 1.0, 21)
    for start in range(0, len(demand), 64):                             # bounded memory
        a = allocation[start:start + 64, None]
        d = demand[start:start + 64, None]
        top = (lam * a + mu * d + spare).argmax(axis=1)
        near_lam = np.maximum(lam[top, None, None] + fine[None, :, None] * lam_step, 0.0)
        near_mu = np.maximum(mu[top, None, None] + fine[None, None, :] * mu_step, 0.0)
        near_lam, near_mu = np.broadcast_arrays(near_lam, near_mu)
        value = near_lam * a[:, :, None] + near_mu * d[:, :, None] + \
            _spare(terms, near_lam, near_mu)        # holds the coarse best (offset 0)
        result[start:start + 64] = value.reshape(len(a), -1).max(axis=1)
    return np.maximum(result, demand * best)


def _spare(terms: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
           lam: np.ndarray, mu: np.ndarray) -> np.ndarray:
    """At each price pair: the hosts' watts net of what the prices pay them, at the load
    where that is least, summed over the hosts where it is negative (the dual's constant)."""
    counts, alloc, mips, tables = terms
    load = np.arange(tables.shape[1]) / (tables.shape[1] - 1)           # 0, 0.1, ... 1
    total = np.zeros(lam.shape)
    for m in range(len(counts)):
        net = tables[m] - lam[..., None] * alloc[m] - mu[..., None] * (mips[m] * load)
        total += counts[m] * np.minimum(net.min(axis=-1), 0.0)
    return total


def allocation_floor_steps(trace: Trace, dc: DataCentre, ends: np.ndarray | None = None
                           ) -> np.ndarray:
    """(T,) the allocation floor of each interval in kWh: the bound at both of its ends,
    averaged, as the replay meters a host's power (linear over the interval)."""
    demand = running_demand(trace, ends).sum(axis=0)
    allocation = running_allocation(trace, ends)
    both = allocation_floor_watts(dc, np.concatenate([allocation, allocation]),
                                  np.concatenate([demand[:-1], demand[1:]]))
    start, end = both[:len(allocation)], both[len(allocation):]
    result: np.ndarray = (start + end) / 2 * trace.step_s / 3.6e6
    return result


def allocation_floor_kwh(trace: Trace, dc: DataCentre, ends: np.ndarray | None = None
                         ) -> float:
    """The allocation floor of the whole trace in kWh (never below the physical floor)."""
    return float(allocation_floor_steps(trace, dc, ends).sum())
