"""What a plan was asked for, as the command-line words that ask for it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Recorded options that have a flag of their own on 'consolidator plan'.
FLAGS = ("light", "capacity_model", "confidence")


def asked_for(algorithm: str, ranking: str | None, options: Mapping[str, Any]) -> str:
    """e.g. 'hvp --light', 'firstfit -r ucac --capacity-model ucac --confidence 0.999
    -o bin=8x8x6'."""
    words = [algorithm]
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
    return " ".join(words)
