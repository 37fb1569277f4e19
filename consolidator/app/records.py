"""What the API reads from the store: the hosts as last recorded, snapshots, plans,
rollbacks, the journal and jobs; never the live cloud or a BMC."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from consolidator.app.context import AppContext
from consolidator.core.errors import NotFoundError
from consolidator.store import host_states
from consolidator.store.plans import list_plans
from consolidator.store.snapshots import Snapshot, list_snapshots, load_snapshot

#: Rows read at most for one listing (then paged by marker).
MOST_ROWS = 100_000
_LOCK = threading.Lock()
#: Held while a snapshot is read from the store (one read at a time).
_READING = threading.Lock()
#: Snapshots never change: the newest few, by id, read once per process.
_SNAPSHOTS: OrderedDict[str, Snapshot] = OrderedDict()
#: Nor do their hosts as the API shows them (without the recorded states): by snapshot id.
_HOST_VIEWS: OrderedDict[str, list[dict[str, Any]]] = OrderedDict()
#: How many snapshots (and their host views) a process keeps.
KEPT = 8


def snapshot(ctx: AppContext, ref: str) -> Snapshot:
    """A stored snapshot (kept once read; readers asking for one not yet read wait for the
    one of them that reads it, rather than each reading it again)."""
    with _LOCK:
        if ref in _SNAPSHOTS:
            return _SNAPSHOTS[ref]
    with _READING:
        with _LOCK:
            if ref in _SNAPSHOTS:
                return _SNAPSHOTS[ref]
        found = load_snapshot(ctx.engine(), ref)
        with _LOCK:
            _SNAPSHOTS[found.info.id] = found
            while len(_SNAPSHOTS) > KEPT:
                _SNAPSHOTS.popitem(last=False)
    return found


def snapshot_hosts(ctx: AppContext, ref: str) -> tuple[Snapshot, list[dict[str, Any]]]:
    """A stored snapshot and its hosts as the API shows them, with their populations and
    no recorded state (made once per snapshot: treat them as read-only)."""
    snap = snapshot(ctx, ref)
    with _LOCK:
        views = _HOST_VIEWS.get(snap.info.id)
    if views is None:
        views = host_views(snap, {})
        with _LOCK:
            _HOST_VIEWS[snap.info.id] = views
            while len(_HOST_VIEWS) > KEPT:
                _HOST_VIEWS.popitem(last=False)
    return snap, views


def snapshots(ctx: AppContext, cloud: str | None) -> list[Any]:
    """Snapshot headers, newest first."""
    return list_snapshots(ctx.engine(), cloud=cloud, limit=MOST_ROWS)


def plans(ctx: AppContext, cloud: str | None, status: str | None) -> list[Any]:
    """Plan header rows, newest first."""
    return list_plans(ctx.engine(), cloud=cloud, status=status, limit=MOST_ROWS)


def _number(value: float) -> float | int:
    """A whole amount as an int (JSON 6, not 6.0)."""
    return int(value) if float(value).is_integer() else round(float(value), 3)


def host_view(host: Any, instances: int, recorded: Any,
              used: tuple[float, float] = (0.0, 0.0)) -> dict[str, Any]:
    """One host as the API shows it: no BMC detail beyond whether it has one; the vCPUs
    and memory its instances claim (used) beside Placement's capacity."""
    vcpus_capacity, memory_capacity, _ = host.capacity
    return {"name": host.name, "compute_host": host.compute_host or host.name,
            "availability_zone": host.availability_zone, "status": host.status,
            "state": host.state, "power": host.power,
            "disabled_reason": host.disabled_reason, "aggregates": list(host.aggregates),
            "vcpus": host.vcpus, "memory_mb": host.memory_mb, "disk_gb": host.disk_gb,
            "vcpus_used": _number(used[0]), "vcpus_capacity": _number(vcpus_capacity),
            "memory_mb_used": _number(used[1]),
            "memory_mb_capacity": _number(memory_capacity),
            "instances": instances, "has_bmc": bool(host.bmc), **_recorded(recorded)}


def host_views(snap: Snapshot, states: dict[str, Any]) -> list[dict[str, Any]]:
    """Every host of a snapshot as the API shows it, with the state recorded for it."""
    cluster = snap.cluster
    if not cluster.hosts:
        return []
    counts = cluster.population.tolist()
    used = cluster.usage[:, :2].tolist()
    return [host_view(h, counts[i], states.get(h.name), (used[i][0], used[i][1]))
            for i, h in enumerate(cluster.hosts)]


def _recorded(recorded: Any) -> dict[str, Any]:
    """The state consolidator recorded for a host, and since when (None, None: none)."""
    return {"recorded_state": recorded.state if recorded else None,
            "recorded_since": recorded.since if recorded else None}


def hosts(ctx: AppContext, cloud: str) -> tuple[Any, list[dict[str, Any]]]:
    """The newest snapshot of the cloud and its hosts, with the states consolidator
    recorded; NotFoundError when the cloud has no snapshot yet."""
    newest = list_snapshots(ctx.engine(), cloud=cloud, limit=1)
    if not newest:
        raise NotFoundError(f"no snapshot of cloud {cloud!r} yet: POST /v1/snapshots")
    snap, views = snapshot_hosts(ctx, newest[0].id)
    # recorded under the cloud's identity (the snapshot's endpoint), as the gate keys them;
    # an older release's rows under the name are read where the identity has none
    states = host_states.all_recorded(ctx.engine(), snap.info.key, legacy=cloud)
    return snap.info, [{**view, **_recorded(states.get(view["name"]))} for view in views]


def plan_maker(ctx: AppContext, plan_id: str) -> dict[str, Any] | None:
    """Who made the plan (the actor's JSON), if recorded."""
    from consolidator.store.plans import creator

    return creator(ctx.engine(), plan_id)
