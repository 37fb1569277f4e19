"""The daemon's Prometheus exporter, started when [metrics] port is set, and what it reads
from the database: the totals every command adds to, and the newest snapshot."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from consolidator.app.context import AppContext
from consolidator.app.settings import metrics_settings

if TYPE_CHECKING:
    from consolidator.core.model import Cluster
    from consolidator.store.snapshots import Snapshot
    from consolidator.telemetry.exporter import Metrics, StoredStats


def stored_stats(ctx: AppContext) -> StoredStats:
    """The totals the database keeps (runs, live migrations, dropped notifications, lost
    leases, the last cycle), the plans running now, whoever ran them, and the shutdowns
    pending past [executor] power_timeout (by the database's clock): read at each scrape."""
    from consolidator.app.settings import executor_settings
    from consolidator.core.host_gate import POWERING_OFF
    from consolidator.store.history import runs_in_progress
    from consolidator.store.host_states import overdue
    from consolidator.store.totals import read_all
    from consolidator.telemetry.exporter import StoredStats

    engine = ctx.engine()
    late = overdue(engine, POWERING_OFF, executor_settings(ctx.config).power_timeout)
    return StoredStats(totals=read_all(engine), running=runs_in_progress(engine),
                       overdue_shutdowns=len(late))


def last_known_hosts(ctx: AppContext, cloud: str | None) -> tuple[Snapshot, Cluster] | None:
    """The newest stored snapshot of a live cloud (of any, without a name), and its hosts
    with the power actions journaled since applied (a cycle's snapshot precedes its
    power-offs); None without one."""
    from dataclasses import replace

    from consolidator.core.model import Cluster
    from consolidator.store import journal
    from consolidator.store.snapshots import list_snapshots, load_snapshot

    engine = ctx.engine()
    info = next((i for i in list_snapshots(engine, cloud=cloud or None, limit=20)
                 if not i.cloud.startswith("scenario:")), None)
    if info is None:
        return None
    snap = load_snapshot(engine, info.id)
    power: dict[str, str] = {}
    for entry in journal.entries(engine, cloud=info.cloud, since=info.taken_at,
                                 state=journal.SUCCEEDED, actions=("power_off", "power_on")):
        power[entry.target] = "off" if entry.action == "power_off" else "on"
    hosts = tuple(replace(h, power=power[h.name], state="down" if power[h.name] == "off"
                          else h.state) if h.name in power else h for h in snap.cluster.hosts)
    return snap, Cluster(hosts=hosts, instances=snap.cluster.instances,
                         server_groups=snap.cluster.server_groups)


def start_metrics(ctx: AppContext) -> Metrics | None:
    """The exporter, listening on [metrics] address and port; None when no port is set."""
    settings = metrics_settings(ctx.config)
    if not settings.port:
        return None
    from consolidator.telemetry.exporter import Metrics

    metrics = Metrics(stored=partial(stored_stats, ctx), waiting=partial(waiting, ctx))
    metrics.start(settings.port, settings.address)
    return metrics


def waiting(ctx: AppContext) -> dict[str, int]:
    """The notifications waiting in the context's outbox, by receiver."""
    return ctx.outbox.waiting() if ctx.outbox is not None else {}


def record_cycle_end(ctx: AppContext, at: float) -> None:
    """The daemon cycle's end (Unix time), kept in the database: both daemons of a pair
    export it as consolidator_last_cycle_timestamp_seconds."""
    from consolidator.store.totals import set_value

    set_value(ctx.engine(), "last_cycle_timestamp_seconds", at)


def count_lost_lease(ctx: AppContext, lease: str) -> None:
    """Add one to leases_lost_total{lease} (the alert 'a lease lost' reads it)."""
    from consolidator.store.totals import add

    add(ctx.engine(), "leases_lost_total", {"lease": lease})
