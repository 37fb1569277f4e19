"""One option of the INI configuration's schema (app/config.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Option:
    """One config option: where it lives, its type, its default and what it does."""

    section: str
    name: str
    type: type
    default: Any
    help: str
    choices: tuple[str, ...] = ()
    #: The interval a number must lie in, as text: "[1, inf)", "(0, 1)", "[0, 65535]".
    range: str = ""
    #: A fixed form checked at load: "timezone" (an IANA zone), "address" (an IP address
    #: or a host name) or "url" (http or https, or empty).
    form: str = ""
    #: A number that may be left empty: what empty means (its value is then None).
    empty: str = ""
