"""ABP ranking (paper 000 III): gamma, demand smoothing, incremental gamma_sys, the choice."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from consolidator.core.errors import UsageError
from consolidator.core.planner import plan_cluster
from consolidator.core.rankings.abp import (
    ABPRanking,
    DemandStats,
    gamma,
    gamma_sys_all,
    gamma_sys_full,
    make_abp,
    system_stats,
)

from .builders import cluster, hosts, vm


def test_gamma_by_hand() -> None:
    # mu = (1, 2), S = [[1, 0.5], [0.5, 2]]:
    # mu'S mu = 1*1 + 2*(1*2*0.5) + 4*2 = 1 + 2 + 8 = 11; mu'mu = 5; gamma = sqrt(11) / 5.
    mean = np.array([1.0, 2.0])
    cov = np.array([[1.0, 0.5], [0.5, 2.0]])
    assert gamma(mean, cov) == pytest.approx(np.sqrt(11.0) / 5.0, abs=1e-12)


def test_gamma_is_the_univariate_cv_for_one_resource_and_zero_at_zero_mean() -> None:
    assert gamma(np.array([4.0]), np.array([[9.0]])) == pytest.approx(3.0 / 4.0)
    assert gamma(np.zeros(3), np.eye(3)) == 0.0


def test_system_stats_by_hand() -> None:
    # Rows (0, 0.5), (1, 0.5): mean (0.5, 0.5); population variance of column 0 is 0.25,
    # column 1 is constant, so S = [[0.25, 0], [0, 0]]; gamma = sqrt(0.25*0.25) / 0.5 = 0.5.
    mean, cov = system_stats(np.array([[0.0, 0.5], [1.0, 0.5]]))
    assert mean == pytest.approx([0.5, 0.5])
    assert cov == pytest.approx(np.array([[0.25, 0.0], [0.0, 0.0]]))
    assert gamma(mean, cov) == pytest.approx(0.5)


def test_smoothing_three_arrivals_by_hand() -> None:
    # alpha 0.5, v = (1, 0), (0, 1), (1, 1); the first arrival initialises the statistics.
    # nu: (1, 0) -> (0.5, 0.5) -> (0.75, 0.75)
    # M:  [[1,0],[0,0]] -> [[0.5,0],[0,0.5]] -> [[0.75,0.5],[0.5,0.75]]
    # S = M - nu nu' = [[0.75-0.5625, 0.5-0.5625], ...] = [[0.1875, -0.0625], [-0.0625, 0.1875]]
    # mu'S mu = 0.75^2 * (0.1875 - 0.0625 - 0.0625 + 0.1875) = 0.5625 * 0.25 = 0.140625
    # (mu'mu)^2 = 1.125^2 = 1.265625, so gamma = sqrt(0.140625 / 1.265625) = 1/3.
    stats = DemandStats(alpha=0.5)
    assert stats.gamma == 0.0
    for v in ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0)):
        stats.update(np.array(v))
    assert stats.mean == pytest.approx([0.75, 0.75])
    assert stats.moment == pytest.approx(np.array([[0.75, 0.5], [0.5, 0.75]]))
    assert stats.cov == pytest.approx(np.array([[0.1875, -0.0625], [-0.0625, 0.1875]]))
    assert stats.gamma == pytest.approx(1.0 / 3.0)


def test_homogeneous_stream_has_zero_demand_variability() -> None:
    stats = DemandStats(alpha=0.005)
    for _ in range(10):
        stats.update(np.array([0.0625, 0.09375, 0.0]))
    assert stats.gamma == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("seed", range(25))
def test_incremental_gamma_sys_equals_full_recomputation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    hosts_n = int(rng.integers(1, 40))
    now = rng.random((hosts_n, 3)) * rng.choice([0.0, 1.0], size=(hosts_n, 1), p=[0.2, 0.8])
    after = np.minimum(now + rng.random(3) * 0.3, 1.0)
    members = rng.random(hosts_n) < 0.8
    fast = gamma_sys_all(now, after, members)
    slow = gamma_sys_full(now, after, members)
    assert np.max(np.abs(fast - slow)) < 1e-9


@pytest.mark.parametrize("members", [np.ones(5, dtype=bool), np.zeros(5, dtype=bool)])
@pytest.mark.parametrize("level", [0.0, 0.5])
def test_incremental_gamma_sys_on_identical_hosts(members: np.ndarray, level: float) -> None:
    now = np.full((5, 3), level)
    after = now + np.array([0.1, 0.0, 0.2])
    assert np.max(np.abs(gamma_sys_all(now, after, members)
                         - gamma_sys_full(now, after, members))) < 1e-9


def _state(used: list[list[float]], demand: list[float]) -> SimpleNamespace:
    cap = np.tile([10.0, 10.0, 10.0], (len(used), 1))
    return SimpleNamespace(capacity=cap, free=np.asfortranarray(cap - np.array(used)),
                           demand=np.array([demand]),
                           problem=SimpleNamespace(powered=np.ones(len(used), dtype=bool)))


def test_abp_picks_the_host_a_hand_computation_says() -> None:
    # One resource in use (the others are 0, so they drop out of mu and S). Hosts are at
    # 0.4, 0.2, 0.0; the item adds 0.2. gamma_dem of one arrival is 0 (nothing varies yet).
    # After placing on host 0: (0.6, 0.2, 0.0): mean 0.8/3, var = (0.36+0.04)/3 - mean^2
    #   = 0.1333 - 0.0711 = 0.0622, gamma = sqrt(0.0622)/0.2667 = 0.935
    # host 1: (0.4, 0.4, 0.0): var = 0.32/3 - 0.0711 = 0.0356, gamma = 0.707
    # host 2: (0.4, 0.2, 0.2): var = 0.24/3 - 0.0711 = 0.0089, gamma = 0.354
    # Closest to 0 is host 2 (spread); host 2 is full, so host 1.
    state = _state([[4, 0, 0], [2, 0, 0], [0, 0, 0]], [2, 0, 0])
    ranking = ABPRanking(alpha=0.5, prime=False)
    assert ranking.choose(state, 0, np.array([True, True, True])) == 2
    assert ranking.last_gamma_sys == pytest.approx(np.sqrt(0.08 / 9) / (0.8 / 3))
    assert ABPRanking(prime=False).choose(state, 0, np.array([True, True, False])) == 1
    assert ABPRanking(prime=False).choose(state, 0, np.zeros(3, dtype=bool)) == -1


def test_abp_packs_when_the_demand_varies() -> None:
    # Same hosts, gamma_sys(n) = 0.935, 0.707, 0.354 as above. Relative demands arrive as
    # v = 0, 0.6, 0.2 (on resource 0) at alpha 0.5: nu 0 -> 0.3 -> 0.25,
    # M 0 -> 0.18 -> 0.5*0.18 + 0.5*0.04 = 0.11, var = 0.11 - 0.0625 = 0.0475,
    # gamma_dem = sqrt(0.0475) / 0.25 = 0.872: host 0 (|0.935 - 0.872| = 0.063) is closest.
    state = _state([[4, 0, 0], [2, 0, 0], [0, 0, 0]], [0, 0, 0])
    state.demand = np.array([[0.0, 0, 0], [6.0, 0, 0], [2.0, 0, 0]])
    ranking = ABPRanking(alpha=0.5, prime=False)
    ranking.observe(state, 0)
    ranking.observe(state, 1)
    assert ranking.choose(state, 2, np.ones(3, dtype=bool)) == 0
    assert ranking.demand.gamma == pytest.approx(np.sqrt(0.0475) / 0.25)


def test_make_abp_options() -> None:
    assert make_abp({}).alpha == 0.005
    assert make_abp({"alpha": "0.01"}).alpha == 0.01
    with pytest.raises(UsageError):
        make_abp({"alpha": "x"})
    with pytest.raises(UsageError):
        make_abp({"alpha": 0})


def test_abp_plugs_into_the_planner() -> None:
    hs = hosts(("h1", 16, 32768), ("h2", 16, 32768), ("h3", 16, 32768), ("h4", 16, 32768))
    vms = [vm("a", "h1", 4, 8192), vm("b", "h2", 2, 4096), vm("c", "h3", 8, 8192),
           vm("d", "h4", 2, 2048), vm("e", "h4", 1, 1024)]
    ranking = make_abp({})
    draft = plan_cluster(cluster(hs, vms), "firstfit", ranking=ranking)
    assert draft is not None
    assert ranking.demand.count >= len(vms)
