"""The day/night spare-host schedule: how many empty hosts to keep powered, by time of day.

Windows come from the [padding] section: ``06:00-18:00 = 2`` and ``18:00-06:00 = 1`` keep two
spare hosts by day and one at night, as in paper 004's long-term run. A window may cross
midnight; the first window (in config order) that holds the local time wins; outside every
window the default ([planner] spare) applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, time


@dataclass(frozen=True)
class Window:
    """Spare hosts to keep from start (inclusive) to end (exclusive), local time."""

    start: time
    end: time
    spare: int

    def holds(self, moment: time) -> bool:
        """Whether the window holds a time of day (windows may cross midnight; a window that
        ends where it starts, such as 00:00-24:00, is the whole day)."""
        if self.start == self.end:
            return True
        if self.start < self.end:
            return self.start <= moment < self.end
        return moment >= self.start or moment < self.end


def _clock(text: str) -> time:
    hours, sep, minutes = text.strip().partition(":")
    if not sep or not hours.isdigit() or not minutes.isdigit():
        raise ValueError(f"{text.strip()!r} is not HH:MM")
    if int(hours) == 24 and int(minutes) == 0:
        return time(0, 0)
    return time(int(hours), int(minutes))


def parse_window(key: str, value: str) -> Window:
    """Parse 'HH:MM-HH:MM' = N; ValueError says what is wrong."""
    start, sep, end = key.partition("-")
    if not sep:
        raise ValueError("expected a window like 06:00-18:00")
    try:
        spare = int(value)
    except ValueError:
        raise ValueError(f"the spare host count {value!r} is not a whole number") from None
    if spare < 0:
        raise ValueError("the spare host count must not be negative")
    try:
        return Window(_clock(start), _clock(end), spare)
    except ValueError as exc:
        raise ValueError(f"{exc} (expected HH:MM-HH:MM, e.g. 06:00-18:00)") from None


def parse_windows(section: Mapping[str, str]) -> list[Window]:
    """Every window of a [padding] section, in order."""
    return [parse_window(k, v) for k, v in section.items()]


def spare_target(windows: list[Window], now: datetime, default: int) -> int:
    """The spare hosts wanted at `now` (its own timezone's time of day)."""
    moment = now.time().replace(second=0, microsecond=0)
    for window in windows:
        if window.holds(moment):
            return window.spare
    return default
