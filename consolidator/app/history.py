"""An operator's own history as a trace: 'simulate trace --prometheus URL --start T --end T'
reads the recorded usage from Prometheus (telemetry/history.py) to replay it."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from consolidator.app.context import AppContext
from consolidator.app.settings import inventory_settings
from consolidator.core.errors import UsageError
from consolidator.core.replay.trace import Trace


@dataclass(frozen=True)
class HistoryRange:
    """Where and when: the Prometheus URL, the start and end times, the step in seconds."""

    url: str
    start: datetime
    end: datetime
    step: float = 300.0


def parse_time(text: str) -> datetime:
    """An ISO 8601 time (UTC unless it says) or Unix seconds; UsageError in one line."""
    try:
        return datetime.fromtimestamp(float(text), tz=timezone.utc)
    except ValueError:
        pass
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"{text!r}: not a time: give ISO 8601 (2026-11-20T00:00) or Unix "
                         f"seconds") from None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def history_trace(ctx: AppContext, history: HistoryRange) -> Trace:
    """The recorded usage of the instances over the range, as a trace ([telemetry] timeout
    applies)."""
    from consolidator.telemetry.history import prometheus_trace
    from consolidator.telemetry.prometheus import PrometheusSource

    configured = inventory_settings(ctx.config).telemetry
    timeout = configured.timeout if configured is not None else 10.0
    return prometheus_trace(PrometheusSource(url=history.url, timeout=timeout),
                            history.start.timestamp(), history.end.timestamp(),
                            step=history.step)
