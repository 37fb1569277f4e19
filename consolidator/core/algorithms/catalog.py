"""Every packing algorithm, listed once by its CLI name (as the descheduler's setupplugins.go).

The catalog imports the algorithm modules; they import nothing from it. A new algorithm is a
module in this folder and one ``_add`` line here, with its -o options (key -> the form of its
value), which ``consolidator algorithms``, the config check and the option check all read.
"""

from __future__ import annotations

from collections.abc import Mapping

from consolidator.core.algorithms.base import Algorithm, AlgorithmFunc
from consolidator.core.algorithms.exact import exact
from consolidator.core.algorithms.firstfit import firstfit
from consolidator.core.algorithms.hvp import hvp
from consolidator.core.algorithms.importance3d import importance3d
from consolidator.core.algorithms.zoned_bestfit import zoned_bestfit
from consolidator.core.registry import Registry

#: Every packing algorithm, by its CLI name.
ALGORITHMS: Registry[Algorithm] = Registry("algorithm")


def _add(name: str, summary: str, paper: str, run: AlgorithmFunc,
         options: Mapping[str, str]) -> None:
    """List one algorithm under its CLI name, with its -o options."""
    ALGORITHMS.add(name, summary, paper, Algorithm(name, summary, paper, run), options)


_add("firstfit", "2D first fit: empty hosts from the end, fill from the start",
     "004 (Hage, Begnum, Yazidi), algorithm I", firstfit, {"order": "size|given"})
_add("zoned-bestfit", "2D best fit with high/low quality CPU zones, fewest migrations",
     "004 (Hage, Begnum, Yazidi), algorithm II", zoned_bestfit,
     {"order": "keep-set|capacity|paper"})
_add("importance-3d",
     "3D bin packing of (vCPU, memory, importance) boxes; bins assigned to keep instances",
     "004 (Hage, Begnum, Yazidi), algorithm III; MPV heuristics H1/H2", importance3d,
     {"bin": "WxHxD", "heuristic": "best|h1|h2", "assign": "true|false"})
_add("hvp", "heterogeneous vector packing: METAHVP (or --light METAHVPLIGHT), fewest hosts",
     "002 (Stillwell, Vivien, Casanova), sections 3.5 and 5.1", hvp,
     {"light": "true|false", "strategies": "ff|bf|pp|NAME,...", "window": "int"})
_add("exact", "OR-Tools CP-SAT on the final placement, seeded with a heuristic's plan; "
     "states the proven gap (optional extra: pip install 'consolidator[exact]')",
     "beyond the papers: an exact yardstick (OR-Tools CP-SAT; docs/algorithms.rst)", exact,
     {"time_limit": "float", "workers": "int"})


def get_algorithm(name: str) -> Algorithm:
    """The algorithm of that name, or a UsageError listing the valid names."""
    return ALGORITHMS.get(name)
