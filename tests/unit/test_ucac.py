"""UCaC (paper 003): the metric, the chance constraint, the ranking, BF-n-sigma and BiHeu."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from consolidator.core.rankings.ucac import (
    UCaCRanking,
    best_fit_nsigma,
    best_fit_ucac,
    biheu,
    d_alpha,
    fits,
    make_ucac,
    max_count,
    ucac,
)

V = 31.58


def test_worked_example_of_section_4_1() -> None:
    """N(2, .5), N(2, 1), N(3, 1.5) (variances): 7 + 2.576 sqrt(3) = 11.46.

    The paper writes D(0.99) = 2.576, which is Phi^-1(0.995) (the two-sided 99% value); the
    one-sided Phi^-1(0.99) of its own definition is 2.326 and gives 11.03.
    """
    assert d_alpha(0.995) == pytest.approx(2.576, abs=5e-4)
    assert ucac(2 + 2 + 3, 0.5 + 1 + 1.5, 0.995) == pytest.approx(11.46, abs=5e-3)
    assert ucac(7, 3.0, 0.99) == pytest.approx(7 + 2.3263 * 3 ** 0.5, abs=1e-3)
    assert d_alpha(0.999) == pytest.approx(3.090, abs=1e-3)


def test_ucac_is_vectorised_and_rejects_bad_confidence() -> None:
    out = ucac(np.array([1.0, 2.0]), np.array([0.0, 4.0]), 0.999)
    assert out.tolist() == pytest.approx([1.0, 2.0 + 2 * d_alpha(0.999)])
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ValueError):
            d_alpha(bad)


def test_chance_constraint() -> None:
    d = d_alpha(0.99)
    assert fits(10.0, 4.0, 10.0 + 2 * d, 0.99)
    assert not fits(10.0, 4.0, 10.0 + 2 * d - 1e-6, 0.99)
    assert fits(np.array([5.0, 9.0]), np.array([1.0, 1.0]), 9.0, 0.5).tolist() == [True, True]
    assert fits(np.array([5.0, 9.0]), np.array([1.0, 1.0]), 9.0, 0.9).tolist() == [True, False]


def _state(alpha: float | None = 0.999) -> SimpleNamespace:
    """Hosts of 10 cores: (mu, var) = (6, 1), (4, .25), (2, 4); the item is (1, sd 1)."""
    problem = SimpleNamespace(usage_mean=np.array([1.0]), usage_std=np.array([1.0]))
    return SimpleNamespace(problem=problem, usage_mu=np.array([6.0, 4.0, 2.0]),
                           usage_var=np.array([1.0, 0.25, 4.0]),
                           cpu_limit=np.full(3, 10.0), confidence=alpha)


def test_ranking_picks_the_hand_computed_host() -> None:
    # alpha .999 (D 3.090): host 0 -> 7 + D sqrt 2 = 11.37 > 10; host 1 -> 5 + D sqrt 1.25 =
    # 8.45; host 2 -> 3 + D sqrt 5 = 9.91, the highest within 10.
    state = _state()
    ranking = make_ucac({})
    assert ranking.name == "ucac"
    all_hosts = np.ones(3, dtype=bool)
    assert ranking.choose(state, 0, all_hosts) == 2
    assert ranking.choose(state, 0, np.array([True, True, False])) == 1
    assert ranking.choose(state, 0, np.array([True, False, False])) == -1
    assert ranking.choose(state, 0, np.zeros(3, dtype=bool)) == -1


def test_ranking_confidence_option_and_state() -> None:
    # alpha .9 (D 1.2816): host 0 -> 7 + 1.81 = 8.81, the highest, and now within 10.
    all_hosts = np.ones(3, dtype=bool)
    assert make_ucac({"confidence": 0.9}).choose(_state(0.999), 0, all_hosts) == 0
    assert make_ucac({}).choose(_state(0.9), 0, all_hosts) == 0
    assert UCaCRanking().choose(_state(None), 0, all_hosts) == 2     # default 0.999
    with pytest.raises(ValueError):
        make_ucac({"confidence": "1"})


def test_ranking_without_chance_constraint_or_statistics() -> None:
    """No cpu_limit: the highest UCaC after wins (host 0); no statistics: mean = vCPUs."""
    state = _state()
    state.cpu_limit = None
    all_hosts = np.ones(3, dtype=bool)
    assert make_ucac({}).choose(state, 0, all_hosts) == 0
    state = _state()
    state.problem = SimpleNamespace(usage_mean=None, usage_std=None, demand=np.array([[4.0]]))
    # 4 more cores, no variance: host 1 -> 8 + D .5 = 9.55 is the only one within 10.
    assert make_ucac({}).choose(state, 0, all_hosts) == 1


def test_ranking_on_a_real_packing_state() -> None:
    """The names the ranking reads exist on PackingState, filled from instance usage."""
    from consolidator.core.algorithms.state import PackingState
    from consolidator.core.constraints import UsageModel, build_problem
    from tests.unit.builders import cluster, hosts, vm

    usage = [(6.0, 1.0), (4.0, 0.5), (2.0, 2.0), (1.0, 1.0)]
    vms = [vm(f"vm-{i}", f"h{i}", vcpus=8, usage={"cpu_mean": m, "cpu_std": s})
           for i, (m, s) in enumerate(usage)]
    state = PackingState(build_problem(
        cluster(hosts(*[(f"h{i}", 10, 65536) for i in range(4)]), vms),
        usage=UsageModel(confidence=0.999)))
    feasible = np.array([True, True, True, False])
    assert make_ucac({}).choose(state, 3, feasible) == 2


def test_max_count_is_the_largest_feasible_w() -> None:
    rng = np.random.default_rng(3)
    for _ in range(500):
        mu, var = rng.uniform(0.2, 5), rng.choice([0.0, rng.uniform(0, 4)])
        base, room, d = rng.uniform(0, 10), rng.uniform(0, 40), rng.uniform(0, 4)
        limit = int(rng.integers(0, 60))
        w = max_count(mu, var, d, room, base, limit)

        def ok(k: int, mu: float = mu, var: float = var, base: float = base,
               d: float = d, room: float = room) -> bool:
            return k * mu + d * np.sqrt(k * var + base) <= room + 1e-9

        assert 0 <= w <= limit
        assert w == 0 or ok(w)
        assert w == limit or not ok(w + 1)


def _batch(seed: int) -> tuple[np.ndarray, np.ndarray, float]:
    """A random batch of services with table-5-like coefficients of variation (0.15-0.8)."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 10))
    s_mu = rng.uniform(0.5, 6.5, k)
    s_sd = s_mu * rng.uniform(0.15, 0.8, k)
    service = rng.integers(0, k, int(rng.integers(20, 400)))
    return s_mu[service], s_sd[service], float(rng.choice([0.99, 0.999]))


def _sums(assignment: np.ndarray, values: np.ndarray, rows: int = 0) -> np.ndarray:
    return np.bincount(assignment, values, minlength=rows)


@pytest.mark.parametrize("seed", range(40))
def test_batches_respect_their_constraints_and_ucac_saves_machines(seed: int) -> None:
    mu, sd, alpha = _batch(seed)
    d = d_alpha(alpha)
    nsig = best_fit_nsigma(mu, sd, V, d)
    assert (_sums(nsig.assignment, mu + d * sd) <= V + 1e-9).all()
    assert nsig.machines == len(np.unique(nsig.assignment))
    for packer in (best_fit_ucac, biheu):
        batch = packer(mu, sd, V, alpha)
        assert len(batch.assignment) == len(mu)
        assert fits(_sums(batch.assignment, mu), _sums(batch.assignment, sd ** 2), V, alpha).all()
        assert batch.machines == len(np.unique(batch.assignment))
        assert batch.machines <= nsig.machines


@pytest.mark.parametrize("seed", range(20))
def test_batches_on_nonempty_machines(seed: int) -> None:
    """Existing machines (half full, one empty) keep the constraint, and are reused first."""
    mu, sd, alpha = _batch(seed)
    d = d_alpha(alpha)
    rng = np.random.default_rng(seed + 100)
    c0 = np.append(rng.uniform(2, 12, 6), 0.0)
    b0 = np.append(rng.uniform(0.5, 4, 6), 0.0)
    s0 = c0 + d * np.sqrt(b0) * 1.5
    for packer in (best_fit_ucac, biheu):
        batch = packer(mu, sd, V, alpha, c0, b0)
        rows = max(int(batch.assignment.max()) + 1, 7)
        c = _sums(batch.assignment, mu, rows)
        c[:7] += c0
        b = _sums(batch.assignment, sd ** 2, rows)
        b[:7] += b0
        assert fits(c, b, V, alpha).all()
        assert batch.machines == int((c > 0).sum())
        assert (c[:6] > c0[:6]).any()
    nsig = best_fit_nsigma(mu, sd, V, d, s0)
    added = _sums(nsig.assignment, mu + d * sd, max(int(nsig.assignment.max()) + 1, 7))
    s = added.copy()
    s[:7] += s0
    assert (s[added > 0] <= V + 1e-9).all()
    assert nsig.machines == int((s > 0).sum())


def test_biheu_follows_algorithm_2_on_a_hand_case() -> None:
    """Services sorted by b/mu: the noisy one fills the fullest-uncertainty machine first."""
    mu = np.array([1.0] * 4 + [2.0] * 2)
    sd = np.array([1.0] * 4 + [0.1] * 2)        # b/mu: 1.0 and 0.005
    batch = biheu(mu, sd, 10.0, 0.999, np.array([0.0, 2.0]), np.array([0.0, 1.0]))
    # Machine 1 (B = 1) first: 2 + w + 3.09 sqrt(1 + w) <= 10 -> w = 2 noisy (9.35); a quiet
    # one: 4 + 2 + 3.09 sqrt(3.01) = 11.36 > 10. Machine 0: the 2 noisy (2 + 4.37), then
    # one quiet (4 + 3.09 sqrt 2.01 = 8.38; two would be 10.39). The last opens machine 2.
    assert batch.assignment.tolist() == [1, 1, 0, 0, 0, 2]
    assert batch.machines == 3


def test_too_large_items_are_refused() -> None:
    for call in (lambda: best_fit_nsigma(np.array([30.0]), np.array([1.0]), V, 3.0),
                 lambda: best_fit_ucac(np.array([30.0]), np.array([1.0]), V, 0.999),
                 lambda: biheu(np.array([30.0]), np.array([1.0]), V, 0.999)):
        with pytest.raises(ValueError):
            call()


def test_empty_batches() -> None:
    empty = np.zeros(0)
    assert best_fit_ucac(empty, empty, V, 0.99, np.array([3.0]), np.array([1.0])).machines == 1
    assert biheu(empty, empty, V, 0.99).machines == 0
    assert best_fit_nsigma(empty, empty, V, 2.0).machines == 0
