"""Names from outside (scenario files, the cloud) made safe to store and show: no control
or format character (a newline, NUL, U+202E RIGHT-TO-LEFT OVERRIDE ...) that could forge a
line of output or hide part of a name."""

from __future__ import annotations

import unicodedata

#: The largest integer a scenario's sizes may hold: Placement's inventories and allocations
#: are 32-bit signed integers (and the fake cloud serves what Placement serves).
LARGEST_INTEGER = 2**31 - 1


def unsafe_character(text: str) -> str | None:
    """The first control, format, surrogate or unassigned character of the text, as U+XXXX;
    None if there is none."""
    for char in text:
        if unicodedata.category(char).startswith("C"):
            return f"U+{ord(char):04X}"
    return None


def quoted(text: str) -> str:
    """The text with each unsafe character written as its escape (\\n, \\x00, \\u202e): what
    is stored and shown of a name the cloud gave, which cannot be refused."""
    if unsafe_character(text) is None:
        return text
    return "".join(char.encode("unicode_escape").decode("ascii")
                   if unicodedata.category(char).startswith("C") else char for char in text)
