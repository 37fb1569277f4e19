"""What a plan was asked for, as the command-line words that ask for it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Recorded options that have a flag of their own on 'consolidator plan'.
FLAGS = ("light", "capacity_model", "confidence")


#: A recorded budget's keys and the flags that ask for them.
BUDGET_FLAGS = (("max_migrations", "--max-migrations"), ("max_moved_gib", "--max-moved-gib"),
                ("target_hosts", "--target-hosts"))


def asked_for(algorithm: str, ranking: str | None, options: Mapping[str, Any],
              choice: Mapping[str, Any] | None = None) -> str:
    """e.g. 'hvp --light', 'firstfit -r ucac --capacity-model ucac --confidence 0.999
    -o bin=8x8x6'; a plan chosen within a budget (choice) reads 'auto --max-migrations 50
    -> zoned-bestfit': what was asked, then what won; a rollback reads 'rollback to
    SNAPSHOT' (its id's first 8 characters, which 'rollback' takes as a prefix)."""
    if algorithm == "rollback" and options.get("target_snapshot"):
        return f"rollback to {str(options['target_snapshot'])[:8]}"
    words = [str(choice.get("asked") or algorithm)] if choice else [algorithm]
    if ranking:
        words += ["-r", ranking]
    if options.get("light"):
        words.append("--light")
    if options.get("capacity_model"):
        words += ["--capacity-model", str(options["capacity_model"])]
        if options.get("confidence") is not None:
            words += ["--confidence", f"{options['confidence']:g}"]
    for key, value in options.items():
        if key not in FLAGS:
            shown = ",".join(map(str, value)) if isinstance(value, list) else value
            words += ["-o", f"{key}={str(shown).lower() if isinstance(value, bool) else shown}"]
    budget = (choice or {}).get("budget") or {}
    for key, flag in BUDGET_FLAGS:
        if budget.get(key) is not None:
            words += [flag, f"{budget[key]:g}"]
    if choice and words[0] != algorithm:
        words += ["->", algorithm]
    return " ".join(words)
