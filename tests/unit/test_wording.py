"""Counts and plan states read as English: no "1 hosts", no "plan X is succeeded"."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from consolidator.core.wording import duration, plural, state_phrase

SOURCE = Path(__file__).resolve().parents[2] / "consolidator"

#: Nouns that follow a count in messages; a count written as f"{n} hosts" says "1 hosts".
NOUNS = ("hosts", "migrations", "instances", "servers", "waves", "plans", "snapshots",
         "moves", "cycles", "failed migrations")
PERCENT_COUNT = re.compile(r"%d ({})\b".format("|".join(NOUNS)))
PLAN_STATE = re.compile(r"(plan|stored)\.status|current|status")
COUNT_THEN_PLURAL = re.compile(r"^ ({})\b".format("|".join(NOUNS)))


def _offences(tree: ast.AST) -> list[str]:
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and PERCENT_COUNT.search(node.value)):
            found.append(f"line {node.lineno}: {node.value[:40]!r}")
        if not isinstance(node, ast.JoinedStr):
            continue
        parts = node.values
        for before, after in zip(parts, parts[1:], strict=False):
            if (isinstance(before, ast.FormattedValue) and isinstance(after, ast.Constant)
                    and not ast.unparse(before.value).startswith("agree(")
                    and isinstance(after.value, str) and COUNT_THEN_PLURAL.match(after.value)):
                found.append(f"line {node.lineno}: {{{ast.unparse(before.value)}}}"
                             f"{after.value[:20]!r}")
            if (isinstance(before, ast.Constant) and isinstance(before.value, str)
                    and before.value.endswith(" is ") and isinstance(after, ast.FormattedValue)
                    and PLAN_STATE.fullmatch(ast.unparse(after.value))):
                found.append(f"line {node.lineno}: 'is {{{ast.unparse(after.value)}}}'")
    return found


def test_no_message_puts_a_bare_count_before_a_plural_or_is_before_a_state() -> None:
    """Every count goes through wording.plural and every plan state through state_phrase."""
    offences = []
    for path in sorted(SOURCE.rglob("*.py")):
        for offence in _offences(ast.parse(path.read_text(), str(path))):
            offences.append(f"{path.relative_to(SOURCE.parent)}: {offence}")
    assert not offences, "\n".join(offences)


def test_the_check_catches_both_kinds() -> None:
    """The scan itself finds f'{n} hosts' and f'is {plan.status}'."""
    tree = ast.parse('f"{len(x)} hosts left"\nf"plan {p} is {plan.status}: no"\n'
                     'log("%d migrations done", n)')
    assert len(_offences(tree)) == 3


@pytest.mark.parametrize(("count", "noun", "expected"), [
    (1, "host", "1 host"), (2, "host", "2 hosts"), (0, "migration", "0 migrations"),
    (1, "is", "1 is"), (3, "box", "3 boxes"), (2, "wave", "2 waves"),
    (1242, "migration", "1,242 migrations"), (10000, "host", "10,000 hosts")])
def test_plural_agrees_with_the_count(count: int, noun: str, expected: str) -> None:
    """One is singular; zero and many are plural; a large count has thousands separators,
    as the tables print it."""
    assert plural(count, noun) == expected


def test_states_read_as_english() -> None:
    """A finished plan 'has succeeded'; a live one 'is running'."""
    assert state_phrase("succeeded") == "has succeeded"
    assert state_phrase("running") == "is running"
    assert state_phrase("cancelled") == "was cancelled"


def test_durations() -> None:
    """Seconds under a minute, minutes and seconds under an hour."""
    assert duration(0.42) == "0.4 s"
    assert duration(192) == "3 min 12 s"
    assert duration(7500) == "2 h 5 min"
