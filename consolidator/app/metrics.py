"""The daemon's Prometheus exporter, started when [metrics] port is set."""

from __future__ import annotations

from typing import TYPE_CHECKING

from consolidator.app.context import AppContext
from consolidator.app.settings import metrics_settings

if TYPE_CHECKING:
    from consolidator.telemetry.exporter import Metrics


def start_metrics(ctx: AppContext) -> Metrics | None:
    """The exporter, listening on [metrics] address and port; None when no port is set."""
    settings = metrics_settings(ctx.config)
    if not settings.port:
        return None
    from consolidator.telemetry.exporter import Metrics

    metrics = Metrics()
    metrics.start(settings.port, settings.address)
    return metrics
