"""Prometheus metrics of the daemon, on a registry of their own (no global state).

Counters only go up: those of this process count from its start, and those of every command
(apply, rollback, the daemon, 'hosts power') are totals the database keeps as the events
happen (store/totals.py), never recounted from rows that a run's end or 'db prune' changes.
State is exported as gauges.

This process's series:
  consolidator_build_info{version="...",python="..."} 1   the running release
  consolidator_leader                                     1 while this daemon holds the
                                                          daemon lease (HA pair), else 0
  consolidator_hosts{state="active|spare|powered_off"}     hosts after the last cycle
  consolidator_hosts_off_holding_work                     powered-off hosts that hold
                                                          instances (should be 0)
  consolidator_plans{status="proposed|approved|..."}       stored plans by state
  consolidator_cycle_duration_seconds                     the last cycle's duration
  consolidator_watts_saved                                watts saved now: the powered-off
                                                          hosts' idle draw, as plans estimate it
  consolidator_migrations_total{result="succeeded|failed"}  the daemon's live migrations,
                                                          since this process started
  consolidator_host_power_watts{host="..."}               each host's draw at the last
                                                          snapshot, as its BMC read it
  consolidator_power_watts                                those readings in all
  consolidator_power_hosts_measured                       hosts that gave a reading
From the database at each scrape (so that both daemons of a pair, and every command, agree):
  consolidator_runs_started_total{kind="plan|rollback"}   runs started (a resume is one)
  consolidator_runs_total{kind,result="succeeded|failed|interrupted"}  runs ended
  consolidator_runs_in_progress{kind}                     plans running now
  consolidator_journal_migrations_total{result="succeeded|failed"}  live migrations journaled
  consolidator_migration_duration_seconds                 a histogram of the succeeded ones
  consolidator_notifications_dropped_total{reason}        webhook events never delivered
  consolidator_leases_lost_total{lease="daemon|executor"}  leases lost while working
  consolidator_last_cycle_timestamp_seconds               when the last daemon cycle ended
                                                          (absent before the first)
"""

from __future__ import annotations

import logging
import platform
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector

from consolidator.core.errors import ConsolidatorError
from consolidator.core.plan import STATES

LOG = logging.getLogger(__name__)
HOST_STATES = ("active", "spare", "powered_off")
MIGRATION_RESULTS = ("succeeded", "failed")
PLAN_STATUSES = STATES
RUN_KINDS = ("plan", "rollback")
RUN_RESULTS = ("succeeded", "failed", "interrupted")
#: Why a notification was not delivered (app/outbox.py).
DROP_REASONS = ("failed", "deadline", "queue_full", "shutdown")
LEASES = ("daemon", "executor")
#: Labels of a stored total: sorted (key, value) pairs.
Labels = tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class StoredStats:
    """What the database holds for the metrics read at each scrape: the stored totals
    ((name, labels) -> value) and the plans running now by kind."""

    totals: Mapping[tuple[str, Labels], float]
    running: Mapping[str, int]
    #: Hosts whose requested shutdown is still pending past [executor] power_timeout.
    overdue_shutdowns: int = 0


def _counter(stats: StoredStats, name: str, doc: str, label: str,
             values: tuple[str, ...]) -> CounterMetricFamily:
    """A stored counter with one label, every known value present (0 until counted)."""
    family = CounterMetricFamily(f"consolidator_{name}", doc, labels=[label])
    known = {dict(labels).get(label) for (n, labels) in stats.totals if n == f"{name}_total"}
    for value in dict.fromkeys((*values, *sorted(v for v in known if v is not None))):
        family.add_metric([value], stats.totals.get((f"{name}_total", ((label, value),)), 0.0))
    return family


class StoredCollector(Collector):
    """The series the database answers, read afresh at each scrape."""

    def __init__(self, read: Callable[[], StoredStats]) -> None:
        self.read = read

    def collect(self) -> Iterator[Any]:
        """The stored totals and the runs in progress; nothing if the read fails."""
        try:
            stats = self.read()
        except ConsolidatorError as exc:
            LOG.warning("metrics from the database: %s", exc)
            return
        yield _counter(stats, "runs_started", "Plan runs started (apply, rollback, the "
                       "daemon; a resume counts), by kind.", "kind", RUN_KINDS)
        runs = CounterMetricFamily("consolidator_runs", "Plan runs ended, by kind and result.",
                                   labels=["kind", "result"])
        for kind in RUN_KINDS:
            for result in RUN_RESULTS:
                runs.add_metric([kind, result], stats.totals.get(
                    ("runs_total", (("kind", kind), ("result", result))), 0.0))
        yield runs
        running = GaugeMetricFamily("consolidator_runs_in_progress", "Plans running now, by "
                                    "kind.", labels=["kind"])
        for kind in RUN_KINDS:
            running.add_metric([kind], stats.running.get(kind, 0))
        yield running
        yield GaugeMetricFamily(
            "consolidator_shutdowns_overdue", "Hosts whose requested shutdown is still "
            "pending (the BMC has not read off) past [executor] power_timeout: they stay "
            "disabled with no work; check them, or end it with 'hosts power on HOST "
            "--force'.", value=stats.overdue_shutdowns)
        yield _counter(stats, "journal_migrations", "Live migrations journaled as ended, by "
                       "result.", "result", MIGRATION_RESULTS)
        yield self._durations(stats)
        yield _counter(stats, "notifications_dropped", "Events a receiver (the webhook, "
                       "the bus) never got, by reason (queue_full: past [notify] "
                       "queue_size).", "reason", DROP_REASONS)
        yield _counter(stats, "leases_lost", "Leases lost while working, by lease.", "lease",
                       LEASES)
        last = stats.totals.get(("last_cycle_timestamp_seconds", ()))
        if last is not None:
            yield GaugeMetricFamily("consolidator_last_cycle_timestamp_seconds",
                                    "Unix time at which the last daemon cycle ended.",
                                    value=last)

    @staticmethod
    def _durations(stats: StoredStats) -> HistogramMetricFamily:
        from consolidator.core.journal_entry import DURATION_BUCKETS, bucket_label

        buckets = [(bucket_label(bound), stats.totals.get(
            ("migration_duration_seconds_bucket", (("le", bucket_label(bound)),)), 0.0))
            for bound in (*DURATION_BUCKETS, float("inf"))]
        return HistogramMetricFamily(
            "consolidator_migration_duration_seconds", "Durations of the succeeded live "
            "migrations.", buckets=buckets,
            sum_value=stats.totals.get(("migration_duration_seconds_sum", ()), 0.0))


class WaitingCollector(Collector):
    """consolidator_notifications_waiting: the events this process's outbox holds."""

    def __init__(self, read: Callable[[], Mapping[str, int]]) -> None:
        self.read = read

    def collect(self) -> Iterator[Any]:
        """One series per receiver (webhook, bus), 0 for those with nothing waiting."""
        family = GaugeMetricFamily(
            "consolidator_notifications_waiting", "Notifications waiting in the outbox "
            "for their receiver (the broker down, the webhook slow), by receiver; at most "
            "[notify] queue_size each.", labels=["receiver"])
        counts = dict(self.read())
        for receiver in dict.fromkeys(("webhook", "bus", *sorted(counts))):
            family.add_metric([receiver], counts.get(receiver, 0))
        yield family


def build_version() -> str:
    """The installed package's version ('unknown' when run from a tree not installed)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("consolidator")
    except PackageNotFoundError:
        return "unknown"


class MetricsError(ConsolidatorError):
    """The metrics endpoint cannot listen where it was asked to."""


class Metrics:
    """The daemon's gauges and counters, and the HTTP endpoint that serves them."""

    def __init__(self, stored: Callable[[], StoredStats] | None = None,
                 waiting: Callable[[], Mapping[str, int]] | None = None) -> None:
        """waiting: the notifications waiting in this process's outbox, by receiver."""
        self.registry = CollectorRegistry(auto_describe=True)
        reg = self.registry
        if stored is not None:
            reg.register(StoredCollector(stored))
        reg.register(WaitingCollector(waiting or dict))
        self.hosts = Gauge("consolidator_hosts", "Hosts by state after the last cycle.",
                           ["state"], registry=reg)
        self.plans = Gauge("consolidator_plans", "Stored plans by status.", ["status"],
                           registry=reg)
        self.cycle_duration = Gauge("consolidator_cycle_duration_seconds",
                                    "Duration of the last cycle.", registry=reg)
        self.watts_saved = Gauge("consolidator_watts_saved",
                                 "Estimated watts saved: the idle draw of the powered-off "
                                 "hosts (BMC readings, else [energy] idle_watts).",
                                 registry=reg)
        self.migrations = Counter("consolidator_migrations", "The daemon's live migrations "
                                  "since it started, by result.", ["result"], registry=reg)
        self.leader = Gauge("consolidator_leader", "1 while this daemon holds the daemon "
                            "lease (the active one of an HA pair), else 0.", registry=reg)
        self.off_holding_work = Gauge("consolidator_hosts_off_holding_work",
                                      "Powered-off hosts that hold instances at the last "
                                      "snapshot (should be 0).", registry=reg)
        Gauge("consolidator_build_info", "The running release: 1, labelled with the "
              "version.", ["version", "python"], registry=reg).labels(
            version=build_version(), python=platform.python_version()).set(1)
        self.host_power = Gauge("consolidator_host_power_watts",
                                "A host's power draw at the last snapshot, read from its BMC.",
                                ["host"], registry=reg)
        self.power = Gauge("consolidator_power_watts",
                           "The draw the BMCs reported at the last snapshot, in all.",
                           registry=reg)
        self.power_hosts = Gauge("consolidator_power_hosts_measured",
                                 "Hosts whose BMC gave a power reading at the last snapshot.",
                                 registry=reg)
        for state in HOST_STATES:
            self.hosts.labels(state=state)
        for result in MIGRATION_RESULTS:
            self.migrations.labels(result=result)
        self.set_plans({})
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    def observe_cycle(self, duration_s: float, hosts_active: int, hosts_spare: int,
                      hosts_off: int, watts_saved: float, migrations_ok: int,
                      migrations_failed: int, *, off_holding_work: int = 0) -> None:
        """Record one finished cycle (its end time is stored: app/metrics.record_cycle_end)."""
        self.cycle_duration.set(duration_s)
        self.set_hosts(hosts_active, hosts_spare, hosts_off, watts_saved,
                       off_holding_work=off_holding_work)
        self.migrations.labels(result="succeeded").inc(migrations_ok)
        self.migrations.labels(result="failed").inc(migrations_failed)

    def observe_power(self, watts: Mapping[str, float]) -> None:
        """Record the last snapshot's readings (host -> watts); hosts without one drop out."""
        self.host_power.clear()
        for host, value in sorted(watts.items()):
            self.host_power.labels(host=host).set(value)
        self.power.set(sum(watts.values()))
        self.power_hosts.set(len(watts))

    def set_hosts(self, hosts_active: int, hosts_spare: int, hosts_off: int,
                  watts_saved: float, *, off_holding_work: int = 0) -> None:
        """The hosts by state, the watts saved, and the powered-off hosts holding work."""
        for state, count in zip(HOST_STATES, (hosts_active, hosts_spare, hosts_off),
                                strict=True):
            self.hosts.labels(state=state).set(count)
        self.watts_saved.set(watts_saved)
        self.off_holding_work.set(off_holding_work)

    def set_leader(self, leading: bool) -> None:
        """Whether this daemon holds the daemon lease now."""
        self.leader.set(1 if leading else 0)

    def set_plans(self, counts: Mapping[str, int]) -> None:
        """Set the plan counts by status; a known status absent from counts becomes 0."""
        for status in dict.fromkeys((*PLAN_STATUSES, *counts)):
            self.plans.labels(status=status).set(counts.get(status, 0))

    def exposition(self) -> bytes:
        """The metrics in the Prometheus text format."""
        return generate_latest(self.registry)

    def start(self, port: int, address: str = "127.0.0.1") -> int:
        """Serve /metrics from a daemon thread; return the bound port (port 0: an ephemeral one)."""
        if self._server is not None:
            raise RuntimeError("the metrics endpoint is already started")
        try:
            self._server, self._thread = start_http_server(port, addr=address,
                                                           registry=self.registry)
        except OSError as exc:
            raise MetricsError(f"metrics endpoint cannot listen on {address}:{port}: "
                               f"{exc.strerror or exc}") from None
        return int(self._server.server_port)

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None
