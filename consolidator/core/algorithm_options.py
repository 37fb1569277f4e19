"""The -o KEY=VALUE options of a plan: every key must belong to the algorithm or the ranking,
and every value must have the form its owner registered."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from consolidator.core.algorithms.catalog import ALGORITHMS
from consolidator.core.errors import UsageError
from consolidator.core.front import AUTO
from consolidator.core.rankings.catalog import RANKINGS


def valid_options(algorithm: str, ranking: str | None) -> dict[str, str]:
    """The keys an algorithm and a ranking accept, each with the form of its value."""
    if algorithm == AUTO:       # it runs every fast algorithm: any of their keys
        keys = {k: form for entry in ALGORITHMS for k, form in entry.options.items()}
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
    """Why a value does not have a form ('int', 'float', 'true|false', 'a|b'), or None."""
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


def _parses(kind: type, value: Any) -> bool:
    try:
        kind(value)
    except (TypeError, ValueError):
        return False
    return not isinstance(value, bool)
