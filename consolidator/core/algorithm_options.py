"""The -o KEY=VALUE options of a plan: every key must belong to the algorithm or the ranking,
and every value must have the form its owner registered."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from consolidator.core.algorithms.catalog import ALGORITHMS
from consolidator.core.algorithms.hvp import select_strategies
from consolidator.core.errors import UsageError
from consolidator.core.front import AUTO, FAST_ALGORITHMS
from consolidator.core.rankings.catalog import RANKINGS


def valid_options(algorithm: str, ranking: str | None) -> dict[str, str]:
    """The keys an algorithm and a ranking accept, each with the form of its value."""
    if algorithm == AUTO:       # it runs the fast algorithms: any of their keys, no other
        keys = {k: form for name in FAST_ALGORITHMS
                for k, form in ALGORITHMS.entry(name).options.items()}
    else:
        keys = dict(ALGORITHMS.entry(algorithm).options)
    if ranking:
        keys.update(RANKINGS.entry(ranking).options)
    return keys


def check_options(algorithm: str, ranking: str | None, options: Mapping[str, Any]) -> None:
    """UsageError, in one line, for an unknown key (listing the valid ones) or a value that
    does not have its key's form."""
    keys = valid_options(algorithm, ranking)
    owner = algorithm + (f" with ranking {ranking}" if ranking else "")
    for key, value in options.items():
        if key not in keys:
            valid = ", ".join(f"{k}={form}" for k, form in sorted(keys.items())) or "none"
            raise UsageError(f"unknown option {key!r} for {owner}: valid keys: {valid}")
        problem = _form_problem(keys[key], value)
        if problem:
            raise UsageError(f"option {key}={value}: {problem} (expected {key}={keys[key]})")


def _form_problem(form: str, value: Any) -> str | None:
    """Why a value does not have a form ('int', 'float', 'true|false', 'a|b', 'WxHxD',
    'float,float,float', 'NAME,...'), or None."""
    if form.endswith(",..."):       # names: one, or a list of them (JSON, the API)
        names = [value] if isinstance(value, str) else value
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            return "not a name or a list of names"
        if form in _NAMES_CHECKED:
            try:
                _NAMES_CHECKED[form](value)
            except UsageError as exc:
                return str(exc)
        return None
    if form == "WxHxD":
        parts = str(value).lower().replace(",", "x").split("x")
        whole = all(p.strip().isdigit() and int(p) > 0 for p in parts)
        return None if len(parts) == 3 and whole else "not three positive integers"
    kinds = form.split(",")
    if len(kinds) > 1 and all(k in ("int", "float") for k in kinds):   # 'float,float,float'
        parts = list(value) if isinstance(value, (list, tuple)) else str(value).split(",")
        if len(parts) != len(kinds) or not all(_parses(int if k == "int" else float, p)
                                               for k, p in zip(kinds, parts, strict=True)):
            return f"not {len(kinds)} numbers"
        return None
    if form == "int":
        return None if _parses(int, value) else "not an integer"
    if form == "float":
        return None if _parses(float, value) else "not a number"
    if form == "true|false":
        return None if isinstance(value, bool) else "not true or false"
    choices = form.split("|")
    if len(choices) > 1 and all(c.islower() or c.isdigit() or "_" in c for c in choices):
        return None if str(value) in choices else f"not one of {', '.join(choices)}"
    return None


#: Lists of names that only their algorithm knows: the form -> its check (UsageError).
_NAMES_CHECKED = {"ff|bf|pp|NAME,...": lambda value: select_strategies({"strategies": value})}


def _parses(kind: type, value: Any) -> bool:
    try:
        kind(value)
    except (TypeError, ValueError):
        return False
    return not isinstance(value, bool)
