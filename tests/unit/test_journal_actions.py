"""'journal --action' names its valid actions (issue 34): the list it gives, ACTIONS, holds
every action the code journals."""

from __future__ import annotations

import ast
from pathlib import Path

from consolidator.core.journal_entry import ACTIONS
from consolidator.execution.host_power import MISWIRED

PACKAGE = Path(__file__).resolve().parents[2] / "consolidator"
#: The journal writers, and where their action argument is when it is given by position.
WRITERS = {"begin": None, "record": None, "_begin": 1, "_note": 1}


def journaled_actions() -> dict[str, str]:
    """Every action given as a literal to a journal writer: action -> where."""
    found: dict[str, str] = {}
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "attr", getattr(node.func, "id", ""))
            if name not in WRITERS:
                continue
            given = [k.value for k in node.keywords if k.arg == "action"]
            at = WRITERS[name]
            if at is not None and len(node.args) > at:
                given.append(node.args[at])
            for value in given:
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    found[value.value] = f"{path.relative_to(PACKAGE)}:{node.lineno}"
    return found


def test_every_journaled_action_is_listed() -> None:
    found = journaled_actions()
    assert {"migrate", "disable", "power_off", "power_on", "enable", "notify"} <= set(found)
    assert not {a: w for a, w in found.items() if a not in ACTIONS}
    assert MISWIRED in ACTIONS
    assert {"abort", "force_complete"} <= set(ACTIONS)     # the executor's timeout actions
