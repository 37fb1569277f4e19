"""Hosts for the terminal: a snapshot's hosts, and the live hosts with their BMC power."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from consolidator.core.model import Cluster
from consolidator.render import bar, table


def snapshot_hosts(cluster: Cluster, watts: Mapping[str, float] | None = None) -> str:
    """One row per host: service, power, population and use against capacity; with watts
    (host -> its BMC reading at the snapshot), a WATTS column, blank where there was none."""
    rows = []
    for i, host in enumerate(cluster.hosts):
        cap = cluster.capacity[i]
        used = cluster.usage[i]
        rows.append([host.name, host.availability_zone, f"{host.status}/{host.state}",
                     host.power, int(cluster.population[i]),
                     f"{used[0]:g}/{cap[0]:g}",
                     f"{used[1] / 1024:.0f}/{cap[1] / 1024:.0f}",
                     f"{used[2]:g}/{cap[2]:g}"])
        if watts is not None:
            rows[-1].append(f"{watts[host.name]:.0f} W" if host.name in watts else "")
    headers = ["HOST", "AZ", "SERVICE", "POWER", "INSTANCES", "VCPU", "RAM GiB", "DISK GB"]
    if watts is not None:
        return table([*headers, "WATTS"], rows, align="llllrrrrr")
    return table(headers, rows, align="llllrrrr")


def live_hosts(rows: list[dict[str, Any]]) -> str:
    """The table of 'consolidator hosts list' (rows from consolidator.app.hosts)."""
    return table(["HOST", "SERVICE", "POWER", "INSTANCES", "VCPU", "RAM", "REASON"], [
        [r["host"], r["service"], r["power"], r["instances"],
         f"{bar(r['vcpu'][0] / r['vcpu'][1] if r['vcpu'][1] else 0, 10)}",
         f"{bar(r['memory_mb'][0] / r['memory_mb'][1] if r['memory_mb'][1] else 0, 10)}",
         r["disabled_reason"] or ""] for r in rows], align="lllrlll")
