"""The trace replay's pure model: power tables, VM types, the metrics, the floor on the
shipped sample, and the policy names."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from consolidator.core.errors import ModelError
from consolidator.core.replay.datacentre import G4, G5, cloudsim_datacentre
from consolidator.core.replay.metrics import Meter
from consolidator.core.replay.policy import replay
from consolidator.core.replay.reference import reference_policy
from consolidator.core.replay.trace import floor_kwh, with_cloudsim_types
from consolidator.scenario.traces import load_planetlab

SAMPLE = Path(__file__).resolve().parents[2] / "consolidator/data/planetlab-sample/20110303-50"


def test_the_power_tables_interpolate_linearly() -> None:
    dc = cloudsim_datacentre(2)
    assert dc.power(np.array([0.0, 0.0]))[0] == G4.watts[0]
    assert dc.power(np.array([1.0, 1.0]))[1] == G5.watts[10]
    assert dc.power(np.array([0.05, 0.95])) == pytest.approx([87.7, 134.0])
    assert dc.best_joules_per_mip == pytest.approx(135 / 5320)


def test_the_vm_types_come_in_four_quarters() -> None:
    trace = with_cloudsim_types([f"vm{i}" for i in range(8)], np.zeros((8, 3)))
    assert list(trace.mips) == [2500, 2500, 2000, 2000, 1000, 1000, 500, 500]
    assert list(trace.ram_mb) == [870, 870, 1740, 1740, 1740, 1740, 613, 613]


def test_no_policy_falls_below_the_floor_on_the_sample() -> None:
    trace = load_planetlab(SAMPLE)
    dc = cloudsim_datacentre(40)
    floor = floor_kwh(trace, dc.best_joules_per_mip)
    for name in ("thr-mmt-0.8", "lr-mmt-1.2", "thr-mmt-1.0", "lr-mmt-1.0"):
        assert replay(trace, dc, reference_policy(name)).energy_kwh >= floor, name


def test_a_linear_overload_counts_the_time_above_capacity() -> None:
    """A host whose load rises from 50 % to 150 % of its MIPS is at 100 % for half of it."""
    dc = cloudsim_datacentre(1)
    cap = dc.capacity[0]
    meter = Meter(dc, np.array([[0.5 * cap, 1.5 * cap]]), np.array([10.0]), 300.0)
    meter.interval(0, np.array([0]), np.array([True]))
    result = meter.result("x")
    assert result.slatah == pytest.approx(0.5)
    assert result.energy_kwh == pytest.approx((102 + 117) / 2 * 300 / 3.6e6)


def test_a_migration_costs_pdm_and_counts_for_cloudsims_slatah() -> None:
    dc = cloudsim_datacentre(2)
    meter = Meter(dc, np.array([[1000.0, 1000.0]]), np.array([30.0]), 300.0)
    meter.migrated(0, np.array([0]), np.array([1]))
    meter.interval(0, np.array([1]), np.array([False, True]))
    result = meter.result("x")
    assert result.pdm == pytest.approx(0.1 * 30 / 300)
    assert result.slatah == 0 and result.slatah_cloudsim == pytest.approx(30 / 300)
    assert result.migrations == 1


@pytest.mark.parametrize("name", ["mad-mmt-2.5", "thr-mmt-x", "lr-mmt-0", "thr"])
def test_unknown_or_bad_policies_are_refused(name: str) -> None:
    with pytest.raises(ModelError):
        reference_policy(name)


def test_demand_above_capacity_is_counted_as_unserved() -> None:
    """A load from 50 % to 150 % of a host's MIPS leaves a quarter of the half above unserved:
    (0.5 cap x half the interval / 2) of cap x interval requested."""
    dc = cloudsim_datacentre(1)
    cap = dc.capacity[0]
    meter = Meter(dc, np.array([[0.5 * cap, 1.5 * cap]]), np.array([10.0]), 300.0)
    meter.interval(0, np.array([0]), np.array([True]))
    assert meter.result("x").unserved == pytest.approx(0.125)


class _AwayAndBack:
    """A policy whose executor moves VM 0 to host 1 and back within the first decision."""

    name, full_power = "away-and-back", False

    def start(self, trace: object, dc: object) -> tuple[np.ndarray, np.ndarray]:
        return np.array([0, 0]), np.array([True, True])

    def step(self, k: int, placement: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        self.k = k
        return placement.copy(), np.array([True, True])

    def migrations_of_step(self) -> tuple[np.ndarray, np.ndarray]:
        rows = [0, 0] if self.k == 0 else []
        return np.array(rows, dtype=np.int64), np.array([1, 0][:len(rows)], dtype=np.int64)

    def notes(self) -> tuple[str, ...]:
        return ()


def test_every_migration_the_executor_ran_counts_and_costs_not_the_net_host_change() -> None:
    """A VM moved away and back in one step ends where it was: the net change is none, but
    two live migrations ran, and both cost the VM (PDM) and busy their destinations."""
    trace = with_cloudsim_types(["a", "b"], np.full((2, 3), 50.0))
    result = replay(trace, cloudsim_datacentre(2), _AwayAndBack())
    assert result.migrations == 2
    seconds = trace.migration_s()[0]
    requested = 0.5 * trace.mips[0] * 300 * 3
    assert result.pdm == pytest.approx(2 * 0.1 * 0.5 * trace.mips[0] * seconds / requested / 2)
    assert result.slatah_cloudsim > 0


def test_slatah_averages_over_the_hosts_used_so_more_short_lived_hosts_dilute_it() -> None:
    """The paper's SLATAH is a mean over the hosts that were ever active (its N): the same
    overload reads half as large when a second host is powered for one interval, and
    hosts_used says how many the mean ran over."""
    dc = cloudsim_datacentre(3)
    cap = dc.capacity[0]
    demand = np.array([[0.5 * cap, 1.5 * cap, 1.5 * cap], [0.0, 0.0, 0.0]])
    alone = Meter(dc, demand, np.array([10.0, 10.0]), 300.0)
    spread = Meter(dc, demand, np.array([10.0, 10.0]), 300.0)
    for meter, second in ((alone, False), (spread, True)):
        meter.interval(0, np.array([0, 0]), np.array([True, second, False]))
        meter.interval(1, np.array([0, 0]), np.array([True, False, False]))
    assert alone.result("x").hosts_used == 1 and spread.result("x").hosts_used == 2
    assert alone.result("x").slatah == pytest.approx((0.5 + 1) / 2)
    assert spread.result("x").slatah == pytest.approx(alone.result("x").slatah / 2)
    assert alone.result("x").as_dict()["hosts_used"] == 1
    # weighed by active time, the extra interval of the second host counts as such
    assert alone.result("x").time_over == pytest.approx(1.5 / 2)
    assert spread.result("x").time_over == pytest.approx(1.5 / 3)
    assert spread.result("x").as_dict()["time_over"] == pytest.approx(0.5)
