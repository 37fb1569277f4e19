"""Words for counts and plan states, so that no message says "1 hosts" or "is succeeded"."""

from __future__ import annotations

#: Nouns whose plural is not the noun plus "s".
_IRREGULAR = {"is": "are", "was": "were", "has": "have", "stays": "stay", "this": "these"}

#: How a state reads after "plan ID ": "is proposed", "has succeeded", "was cancelled".
_STATE_PHRASES = {
    "proposed": "is proposed", "approved": "is approved", "running": "is running",
    "succeeded": "has succeeded", "failed": "has failed", "cancelled": "was cancelled",
    "superseded": "was superseded", "interrupted": "was interrupted",
}


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """'1 host', '2 hosts', '1,509 migrations': the count (with thousands separators) and
    its noun, agreeing."""
    return f"{count:,} {noun if count == 1 else plural_form or _plural_of(noun)}"


def _plural_of(noun: str) -> str:
    if noun in _IRREGULAR:
        return _IRREGULAR[noun]
    if noun.endswith(("s", "x", "sh", "ch")):
        return noun + "es"
    return noun + "s"


def state_phrase(status: str) -> str:
    """The verb phrase for a plan state: 'has succeeded', 'is running', 'was cancelled'."""
    return _STATE_PHRASES.get(status, f"is {status}")


def duration(seconds: float) -> str:
    """'0.4 s', '42 s', '3 min 12 s', '2 h 5 min': a duration an operator reads at a glance."""
    if seconds < 10:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


def agree(count: int, one: str, many: str) -> str:
    """The word that agrees with count: agree(n, 'is', 'are')."""
    return one if count == 1 else many
