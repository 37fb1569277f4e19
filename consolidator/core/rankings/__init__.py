"""Host rankings: which feasible host an instance goes to, registered by name.

The baselines of paper 000 (pack, spread, their distance forms, xbalance) are in
``baseline``, ABP (000) in ``abp`` and BF-UCaC (003) in ``ucac``. A ranking is made from its
options by the factory registered under its name.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from consolidator.core.registry import Registry

RankingFactory = Callable[[Mapping[str, Any]], Any]


def _load_rankings() -> None:
    from consolidator.core.rankings import abp, baseline, ucac  # noqa: F401


#: Every ranking, by its CLI name; the object is its factory.
RANKINGS: Registry[RankingFactory] = Registry("ranking", _load_rankings)


def get_ranking(name: str | None, options: Mapping[str, Any] | None = None) -> Any:
    """The ranking of that name made from options (None or '' for the algorithm's own)."""
    if not name:
        return None
    return RANKINGS.get(name)(options or {})
