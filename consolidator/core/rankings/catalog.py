"""Every host ranking, listed once by its CLI name (as the descheduler's setupplugins.go).

The catalog imports the ranking modules; they import nothing from it. Each entry's object is
the ranking's factory (its -o options -> the ranking), with the form of each option's value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from consolidator.core.rankings.abp import make_abp
from consolidator.core.rankings.baseline import (
    PRIME,
    make_pack,
    make_pack_dist,
    make_spread,
    make_spread_dist,
    make_xbalance,
)
from consolidator.core.rankings.ucac import make_ucac
from consolidator.core.registry import Registry

RankingFactory = Callable[[Mapping[str, Any]], Any]

#: Every ranking, by its CLI name; the object is its factory.
RANKINGS: Registry[RankingFactory] = Registry("ranking")
RANKINGS.add("pack", "Pack_r: fill the host with the least prime resource left", "000 II.B",
             make_pack, PRIME)
RANKINGS.add("pack-dist", "Pack_dist: the host whose utilisation vector is longest after",
             "000 II.B", make_pack_dist)
RANKINGS.add("spread", "Spread_r: the host with the most prime resource left", "000 II.C",
             make_spread, PRIME)
RANKINGS.add("spread-dist", "Spread_dist: the host whose utilisation vector is shortest after",
             "000 II.C", make_spread_dist)
RANKINGS.add("xbalance", "XBalance: min w'sigma, spreading (w>0) or packing (w<0) per resource",
             "000 II.D", make_xbalance, {"weights": "float,float,float"})
RANKINGS.add("abp", "ABP: the host whose utilisation variability after best matches the demand's",
             "000 III", make_abp, {"alpha": "float"})
RANKINGS.add("ucac", "BF-UCaC: the host of highest used capacity at confidence after, within V",
             "003 5.1", make_ucac, {"confidence": "float"})


def get_ranking(name: str | None, options: Mapping[str, Any] | None = None) -> Any:
    """The ranking of that name made from options (None or '' for the algorithm's own)."""
    if not name:
        return None
    return RANKINGS.get(name)(options or {})
