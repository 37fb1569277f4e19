"""The allocation floor (core/replay/bound.py): the least energy of any placement that serves
the demand within Placement's CPU allocation ratio."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from consolidator.core.replay.bound import (
    allocation_floor_kwh,
    allocation_floor_watts,
    running_allocation,
)
from consolidator.core.replay.datacentre import G4, G5, DataCentre, HostModel, cloudsim_datacentre
from consolidator.core.replay.trace import end_steps, floor_kwh
from consolidator.scenario.traces import load_planetlab

SAMPLE = Path(__file__).resolve().parents[2] / "consolidator/data/planetlab-sample/20110303-50"

#: 1,000 MIPS, 10 vCPUs, 100 W idle, +10 W per 10 % CPU.
LINEAR = HostModel("linear", 1, 1000.0, 0, tuple(100.0 + 10 * j for j in range(11)))


def test_where_the_allocation_binds_the_bound_is_the_hosts_it_forces_on() -> None:
    # 50 vCPUs at 1:1 need 5 hosts of 10; 2,000 MIPS add 100 W per 1,000 MIPS: 700 W.
    # The physical floor serves the demand at 200 W per 1,000 MIPS: 400 W.
    dc = DataCentre.of([(LINEAR, 10)], cpu_allocation_ratio=1.0)
    watts = allocation_floor_watts(dc, np.array([50.0]), np.array([2000.0]))
    assert watts[0] == pytest.approx(700.0)
    assert dc.best_joules_per_mip * 2000 == pytest.approx(400.0)


def test_where_it_does_not_bind_the_bound_is_the_physical_floor() -> None:
    dc = DataCentre.of([(LINEAR, 10)], cpu_allocation_ratio=16.0)
    watts = allocation_floor_watts(dc, np.array([50.0]), np.array([2000.0]))
    assert watts[0] == pytest.approx(400.0)


def test_no_placement_within_the_allocation_draws_less_than_the_bound() -> None:
    """Random placements of random VMs on G4 and G5 hosts, each host within its vCPUs x
    ratio and its MIPS: their watts are never below the bound, and the tightest comes
    near it."""
    rng = np.random.default_rng(35)
    closest = np.inf
    for ratio in (1.0, 2.0, 4.0, 8.0):
        dc = DataCentre.of([(G4, 6), (G5, 6)], cpu_allocation_ratio=ratio)
        slots = np.round(dc.capacity / 100) * ratio
        drawn, held_all, served_all = [], [], []
        for _ in range(200):
            vcpus = rng.choice([5, 10, 20, 25], size=rng.integers(1, 40))
            mips = vcpus * 100 * rng.uniform(0, 1, size=len(vcpus))
            held, served = np.zeros(dc.hosts), np.zeros(dc.hosts)
            for v, m in zip(vcpus, mips, strict=True):
                fits = np.flatnonzero((held + v <= slots) & (served + m <= dc.capacity))
                if len(fits):
                    h = fits[0] if rng.random() < 0.5 else rng.choice(fits)
                    held[h] += v
                    served[h] += m
            drawn.append(float(dc.power(served / dc.capacity)[held > 0].sum()))
            held_all.append(held.sum())
            served_all.append(served.sum())
        bound = allocation_floor_watts(dc, np.array(held_all), np.array(served_all))
        assert (np.array(drawn) >= bound - 1e-6).all()
        closest = min(closest, float(np.min(np.array(drawn) / bound)))
    assert closest < 1.1


def test_on_the_sample_the_bound_is_above_the_floor_only_where_placement_binds() -> None:
    trace = load_planetlab(SAMPLE)
    ends = end_steps(trace)
    dc = cloudsim_datacentre(40)
    floor = floor_kwh(trace, dc.best_joules_per_mip, ends)
    at = {r: allocation_floor_kwh(trace, replace(dc, cpu_allocation_ratio=r), ends)
          for r in (1.0, 4.0, 16.0)}
    assert at[16.0] == pytest.approx(floor, rel=1e-3)
    assert floor <= at[16.0] <= at[4.0] < at[1.0]
    # the VMs that run in the first interval hold their vCPUs (5-25 each)
    assert running_allocation(trace, ends)[0] == pytest.approx(
        np.maximum(np.round(trace.mips / 100), 1)[ends > 0].sum())
    assert at[1.0] > 1.5 * floor


def test_g5_alone_sets_the_bound_of_cloudsims_data_centre() -> None:
    """G5 is the cheaper host per allocated vCPU and per MIPS, so at a binding ratio the
    bound is that of G5 hosts alone: n = a / 212 hosts on the convex hull of its table."""
    dc = cloudsim_datacentre(800)
    allocation, demand = np.array([10_000.0]), np.array([150_000.0])
    n, u = 10_000 / 212, 150_000 / 5320
    hull = np.interp(u / n, [0, 0.1, 0.3, 1.0], [93.7, 97, 105, 135])
    assert G4.watts[0] / (37 * 4) > G5.watts[0] / (53 * 4)
    assert allocation_floor_watts(dc, allocation, demand)[0] == pytest.approx(n * hull,
                                                                              rel=2e-3)
