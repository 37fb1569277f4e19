"""Hosts for the terminal: a snapshot's hosts, and the live hosts with their BMC power."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from consolidator.core.journal_entry import Entry
from consolidator.core.model import Cluster
from consolidator.render import bar
from consolidator.render.fit import fit_table
from consolidator.render.listing import TO_THE_MINUTE, Column, Output, listing


def snapshot_hosts(cluster: Cluster, watts: Mapping[str, float] | None = None,
                   width: int = 0) -> str:
    """One row per host: service, power, population and use against capacity; with watts
    (host -> its BMC reading at the snapshot), a WATTS column, blank where there was none.
    Fitted to `width` (0: as it is): use as percentages of capacity first."""
    rows, shares = [], []
    for i, host in enumerate(cluster.hosts):
        cap = cluster.capacity[i]
        used = cluster.usage[i]
        rows.append([host.name, host.availability_zone, f"{host.status}/{host.state}",
                     host.power, int(cluster.population[i]),
                     f"{used[0]:g}/{cap[0]:g}",
                     f"{used[1] / 1024:.0f}/{cap[1] / 1024:.0f}",
                     f"{used[2]:g}/{cap[2]:g}"])
        shares.append([f"{u / c if c else 0:.0%}" for u, c in zip(used[:3], cap[:3],
                                                                   strict=True)])
        if watts is not None:
            rows[-1].append(f"{watts[host.name]:.0f} W" if host.name in watts else "")
    headers = ["HOST", "AZ", "SERVICE", "POWER", "INSTANCES", "VCPU", "RAM GiB", "DISK GB"]
    if watts is not None:
        headers.append("WATTS")
    narrow = {5 + k: (name, [s[k] for s in shares])
              for k, name in enumerate(("VCPU %", "RAM %", "DISK %"))}
    return fit_table(headers, rows, "llllrrrrr"[:len(headers)], width, narrow=narrow,
                     wraps={1: 4})


def _share(pair: list[float]) -> str:
    return bar(pair[0] / pair[1] if pair[1] else 0, 10)


def _percent(pair: list[float]) -> str:
    return f"{pair[0] / pair[1] if pair[1] else 0:.0%}"


#: The columns of 'consolidator hosts list' (rows from consolidator.app.hosts).
HOST_COLUMNS = (
    Column("HOST", ("host",)), Column("SERVICE", ("service",)), Column("POWER", ("power",)),
    Column("STATE", ("state",), cell=lambda r: r.get("state") or "-", wrap=8),
    Column("INSTANCES", ("instances",), align="r"),
    Column("VCPU", ("vcpu",), cell=lambda r: _share(r["vcpu"]),
           narrow=lambda r: _percent(r["vcpu"])),
    Column("RAM", ("memory_mb",), cell=lambda r: _share(r["memory_mb"]),
           narrow=lambda r: _percent(r["memory_mb"])),
    Column("REASON", ("disabled_reason",), cell=lambda r: r["disabled_reason"] or "",
           wrap=16),
    Column("POWER ERROR", ("power_error",), cell=lambda r: r.get("power_error") or "",
           long=True),
    Column("STATE SINCE", ("state_since",), cell=lambda r: r.get("state_since") or "",
           long=True),
    Column("STATE WHY", ("state_why",), cell=lambda r: r.get("state_why") or "", long=True,
           wrap=24))


def live_hosts(rows: list[dict[str, Any]]) -> str:
    """The table of 'consolidator hosts list' (rows from consolidator.app.hosts)."""
    return listing(rows, HOST_COLUMNS, Output())


def entry_json(e: Entry) -> dict[str, Any]:
    """A journal row as JSON."""
    return {**vars(e), "created_at": e.created_at.isoformat(),
            "started_at": e.started_at and e.started_at.isoformat(),
            "finished_at": e.finished_at and e.finished_at.isoformat(),
            "hosts": list(e.hosts)}


#: The columns of 'consolidator journal' (the row id, operator and lease with --long, so
#: that the rest fits 80 columns; -f value and csv give the full plan id).
JOURNAL_COLUMNS = (
    Column("ID", ("id",), align="r", long=True),
    Column("WHEN (UTC)", ("created_at",), short=TO_THE_MINUTE,
           cell=lambda r: r["created_at"][:19].replace("T", " ")),
    Column("PLAN", ("plan_id",), cell=lambda r: (r["plan_id"] or "-")[:8]),
    Column("ACTION", ("action",)),
    Column("TARGET", ("target",), cell=lambda r: r["params"].get("instance", r["target"]),
           wrap=8),
    Column("HOST", ("hosts",), cell=lambda r: " -> ".join(r["hosts"]), wrap=10),
    Column("STATE", ("state",)),
    Column("OPERATOR", ("operator",), cell=lambda r: r["operator"] or "-", long=True, wrap=10),
    Column("RESULT", ("result",), cell=lambda r: r["result"] or "", wrap=8),
    Column("LEASE", ("lease_holder", "lease_generation"), long=True,
           cell=lambda r: r["lease_holder"] and f"{r['lease_holder']} #{r['lease_generation']}"))
