"""The daemon's Prometheus exporter, started when [metrics] port is set."""

from __future__ import annotations

from typing import TYPE_CHECKING

from consolidator.app.context import AppContext

if TYPE_CHECKING:
    from consolidator.telemetry.exporter import Metrics


def start_metrics(ctx: AppContext) -> Metrics | None:
    """The exporter, listening on [metrics] address and port; None when no port is set."""
    port = ctx.config.get("metrics", "port")
    if not port:
        return None
    from consolidator.telemetry.exporter import Metrics

    metrics = Metrics()
    metrics.start(port, ctx.config.get("metrics", "address"))
    return metrics
