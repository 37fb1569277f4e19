"""The live hosts: service, power (asked of each BMC where one is configured) and use."""

from __future__ import annotations

from typing import Any

from consolidator.app.context import AppContext
from consolidator.app.snapshots import read_cloud
from consolidator.core.errors import ConsolidatorError


def host_rows(ctx: AppContext) -> list[dict[str, Any]]:
    """One row per live host: service, power (asked of its BMC where configured), use."""
    cluster = read_cloud(ctx).cluster
    lookup = ctx.power_lookup()
    rows = []
    for h, host in enumerate(cluster.hosts):
        driver = lookup(host.name)
        try:
            power = driver.power_state() if driver else f"{host.power} (no BMC)"
        except ConsolidatorError as exc:
            power = f"unknown ({str(exc)[:40]})"
        cap, used = cluster.capacity[h], cluster.usage[h]
        rows.append({"host": host.name, "service": f"{host.status}/{host.state}",
                     "disabled_reason": host.disabled_reason, "power": power,
                     "instances": int(cluster.population[h]),
                     "vcpu": [float(used[0]), float(cap[0])],
                     "memory_mb": [float(used[1]), float(cap[1])]})
    return rows
