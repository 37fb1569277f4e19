"""The day/night padding schedule."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from consolidator.core.padding import parse_window, parse_windows, spare_target

OSLO = timezone(timedelta(hours=1))
DAY_NIGHT = {"06:00-18:00": "2", "18:00-06:00": "1"}


@pytest.mark.parametrize("hour, minute, expected", [
    (5, 59, 1), (6, 0, 2), (12, 0, 2), (17, 59, 2), (18, 0, 1), (23, 30, 1), (0, 0, 1)])
def test_day_and_night(hour: int, minute: int, expected: int) -> None:
    now = datetime(2026, 11, 22, hour, minute, tzinfo=OSLO)
    assert spare_target(parse_windows(DAY_NIGHT), now, default=0) == expected


def test_outside_every_window_the_default_applies() -> None:
    windows = parse_windows({"08:00-16:00": "3"})
    assert spare_target(windows, datetime(2026, 1, 1, 20, 0, tzinfo=OSLO), default=1) == 1
    assert spare_target([], datetime(2026, 1, 1, 9, 0, tzinfo=OSLO), default=4) == 4


@pytest.mark.parametrize("key, value, message", [
    ("06:00", "2", "expected a window"), ("0600-1800", "2", "is not HH:MM"),
    ("06:00-18:00", "two", "not a whole number"),
    ("06:00-25:99", "1", "HH:MM"), ("06:00-18:00", "-1", "negative")])
def test_bad_windows(key: str, value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_window(key, value)


def test_a_whole_day_window_always_holds() -> None:
    """00:00-24:00 used to parse as 00:00-00:00 and hold at no time at all."""
    from datetime import datetime, timezone

    from consolidator.core.padding import parse_windows, spare_target

    windows = parse_windows({"00:00-24:00": "1"})
    for hour in (0, 7, 12, 19, 23):
        assert spare_target(windows, datetime(2026, 11, 23, hour, 30, tzinfo=timezone.utc),
                            0) == 1
