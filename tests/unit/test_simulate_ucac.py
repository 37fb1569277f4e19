"""The reproduction of 003 section 6.1: the behaviour the paper reports, on one seed."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from consolidator.experiments import ucac as sim

UCAC_ALGS = ("BF-UCaC", "BiHeu")


@pytest.fixture(scope="module")
def result() -> dict[str, Any]:
    """One seed of the whole experiment (about 6 s)."""
    return sim.run(seeds=1, seed=0)


def _cells(result: dict[str, Any]) -> list[tuple[str, float, dict[str, Any]]]:
    out = []
    for case, by_alpha in result["nonempty"].items():
        for alpha, by_k in by_alpha.items():
            for cells in by_k.values():
                out.append((case, float(alpha), cells))
    return out


def test_shape_is_json_ready(result: dict[str, Any]) -> None:
    again = json.loads(json.dumps(result))
    assert again["params"]["seeds"] == 1
    assert set(again["nonempty"]) == {"scale-down", "scale-up"}
    assert set(again["empty"]) == {"0.999", "0.99"}
    for _, _, cells in _cells(result):
        assert set(cells) == set(sim.ALGORITHMS)
        assert set(cells["BiHeu"]["ucac"]) == {"mean", "std"}


def test_baseline_is_the_unit(result: dict[str, Any]) -> None:
    for _, _, cells in _cells(result):
        assert cells["BF-n-sigma"]["ucac"]["mean"] == 1.0
        assert cells["BF-n-sigma"]["machines"]["mean"] == 1.0


def test_ucac_packers_use_fewer_machines_and_less_ucac(result: dict[str, Any]) -> None:
    """Tables 1 and 2: lower UCaC and fewer machines than BF-n-sigma in every case."""
    for _, _, cells in _cells(result):
        for alg in UCAC_ALGS:
            assert cells[alg]["ucac"]["mean"] < 0.99
            assert cells[alg]["machines"]["mean"] < 0.95
    for by_k in result["empty"].values():
        for cells in by_k.values():
            for alg in UCAC_ALGS:
                assert cells[alg]["machines"]["mean"] < cells["BF-n-sigma"]["machines"]["mean"]
                assert cells[alg]["ucac"]["mean"] < cells["BF-n-sigma"]["ucac"]["mean"]


def test_violations_stay_at_or_below_the_risk(result: dict[str, Any]) -> None:
    """Every machine keeps the chance constraint, so violations are at most 1 - alpha."""
    for _, alpha, cells in _cells(result):
        risk = 100.0 * (1.0 - alpha)
        for alg in sim.ALGORITHMS:
            exact = cells[alg]["violation_expected_pct"]["mean"]
            sampled = cells[alg]["violation_pct"]["mean"]
            assert exact <= risk + 1e-9
            # ~1e6 (machine, sample) pairs: the Monte Carlo error is a few % of the rate.
            assert abs(sampled - exact) <= 0.15 * exact + 0.01
        for alg in UCAC_ALGS:
            # ... and the UCaC packers use much of that risk, unlike the baseline.
            assert cells[alg]["violation_expected_pct"]["mean"] > 0.25 * risk
            baseline = cells["BF-n-sigma"]["violation_pct"]["mean"]
            assert cells[alg]["violation_pct"]["mean"] > baseline


def test_render_has_the_three_tables(result: dict[str, Any]) -> None:
    text = sim.render(result)
    for needle in ("Table 1: scale-down", "Table 2: scale-up", "Table 3: empty", "BiHeu",
                   "BF-n-sigma", "±"):
        assert needle in text


def test_services_are_drawn_from_table_5_and_scaled() -> None:
    rng = np.random.default_rng(1)
    for k in (5, 17, 20):
        mu, sd, count, rate = sim.draw_services(rng, k)
        assert len(mu) == k
        assert set(mu.tolist()) <= set(sim.MEAN.tolist())
        if k >= len(sim.MEAN):
            assert set(mu.tolist()) == set(sim.MEAN.tolist())
        assert float(mu @ count) == pytest.approx(sim.BASE_MEAN, rel=0.01)
        assert set(rate.tolist()) <= set(sim.REMOVE.tolist())
        for m, s in zip(mu.tolist(), sd.tolist(), strict=True):
            base = sim.STD[np.isclose(sim.MEAN, m)]
            assert ((s >= 0.9 * base - 1e-12) & (s <= 1.1 * base + 1e-12)).any()


def test_stat_over_seeds() -> None:
    assert sim._stat([1.0]) == {"mean": 1.0, "std": 0.0}
    assert sim._stat([1.0, 3.0]) == pytest.approx({"mean": 2.0, "std": 2 ** 0.5})
