"""The names the commands offer: the packing algorithms, the rankings and the plan states."""

from __future__ import annotations

from consolidator.core.algorithms.catalog import ALGORITHMS, get_algorithm
from consolidator.core.plan import STATES
from consolidator.core.rankings.catalog import RANKINGS, get_ranking


def algorithm_entries() -> list[tuple[str, str, str]]:
    """Every packing algorithm: its name, what it does and its paper."""
    return [(e.name, e.summary, e.source) for e in ALGORITHMS]


def ranking_entries() -> list[tuple[str, str, str]]:
    """Every ranking: its name, what it does and its paper."""
    return [(e.name, e.summary, e.source) for e in RANKINGS]


def plan_states() -> list[str]:
    """Every state of a plan's lifecycle, in order."""
    return list(STATES)


def check_names(algorithm: str | None, ranking: str | None) -> None:
    """Refuse an unknown algorithm or ranking (UsageError) before anything runs."""
    if algorithm:
        get_algorithm(algorithm)
    if ranking:
        get_ranking(ranking, {})
