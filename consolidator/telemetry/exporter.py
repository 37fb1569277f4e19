"""Prometheus metrics of the daemon, on a registry of their own (no global state).

Exposed series:
  consolidator_hosts{state="active|spare|powered_off"}     hosts after the last cycle
  consolidator_plans{status="proposed|approved|..."}       stored plans by state
  consolidator_cycle_duration_seconds                     the last cycle's duration
  consolidator_watts_saved                                watts saved now: the powered-off
                                                          hosts' idle draw, as plans estimate it
  consolidator_last_cycle_timestamp_seconds               when the last cycle ended
  consolidator_migrations_total{result="succeeded|failed"}  live migrations, since start
  consolidator_host_power_watts{host="..."}               each host's draw at the last
                                                          snapshot, as its BMC read it
  consolidator_power_watts                                those readings in all
  consolidator_power_hosts_measured                       hosts that gave a reading
From the database at each scrape (so 'apply' and 'rollback' from the command line count):
  consolidator_runs_total{kind="plan|rollback",status="running|succeeded|failed"}
                                                          plans run, by whatever ran them
  consolidator_journal_migrations_total{result="succeeded|failed"}
                                                          live migrations the journal holds
  consolidator_migration_duration_seconds                 a histogram of the succeeded ones
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest, start_http_server
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from consolidator.core.errors import ConsolidatorError
from consolidator.core.plan import STATES

LOG = logging.getLogger(__name__)
HOST_STATES = ("active", "spare", "powered_off")
MIGRATION_RESULTS = ("succeeded", "failed")
PLAN_STATUSES = STATES


#: Upper bounds of the migration-duration histogram's buckets, in seconds.
DURATION_BUCKETS = (1.0, 2.5, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0)


@dataclass(frozen=True)
class StoredStats:
    """What the database holds about runs, for the metrics read at each scrape."""

    runs: Mapping[tuple[str, str], int]
    migrations: Mapping[str, int]
    durations: Sequence[float]


class StoredCollector(Collector):
    """The series the database answers, read afresh at each scrape."""

    def __init__(self, read: Callable[[], StoredStats]) -> None:
        self.read = read

    def collect(self) -> Iterator[Any]:
        """The runs, migrations and migration durations; nothing if the read fails."""
        try:
            stats = self.read()
        except ConsolidatorError as exc:
            LOG.warning("metrics from the database: %s", exc)
            return
        runs = CounterMetricFamily("consolidator_runs", "Plans run (apply, rollback, the "
                                   "daemon), by kind and state.", labels=["kind", "status"])
        for kind in ("plan", "rollback"):
            for status in ("running", "succeeded", "failed"):
                runs.add_metric([kind, status], stats.runs.get((kind, status), 0))
        yield runs
        moved = CounterMetricFamily("consolidator_journal_migrations", "Live migrations the "
                                    "journal holds, by result.", labels=["result"])
        for result in MIGRATION_RESULTS:
            moved.add_metric([result], stats.migrations.get(result, 0))
        yield moved
        buckets = []
        for bound in DURATION_BUCKETS:
            buckets.append((floatToGoString(bound), sum(d <= bound for d in stats.durations)))
        buckets.append(("+Inf", len(stats.durations)))
        yield HistogramMetricFamily("consolidator_migration_duration_seconds",
                                    "Durations of the succeeded live migrations.",
                                    buckets=buckets, sum_value=float(sum(stats.durations)))


class MetricsError(ConsolidatorError):
    """The metrics endpoint cannot listen where it was asked to."""


class Metrics:
    """The daemon's gauges and counters, and the HTTP endpoint that serves them."""

    def __init__(self, stored: Callable[[], StoredStats] | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        reg = self.registry
        if stored is not None:
            reg.register(StoredCollector(stored))
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
        self.last_cycle = Gauge("consolidator_last_cycle_timestamp_seconds",
                                "Unix time at which the last cycle ended.", registry=reg)
        self.migrations = Counter("consolidator_migrations", "Live migrations by result.",
                                  ["result"], registry=reg)
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
                      migrations_failed: int, *, at: float | None = None) -> None:
        """Record one finished cycle (at: its end as Unix time, default now)."""
        self.cycle_duration.set(duration_s)
        for state, count in zip(HOST_STATES, (hosts_active, hosts_spare, hosts_off),
                                strict=True):
            self.hosts.labels(state=state).set(count)
        self.watts_saved.set(watts_saved)
        self.migrations.labels(result="succeeded").inc(migrations_ok)
        self.migrations.labels(result="failed").inc(migrations_failed)
        self.last_cycle.set(time.time() if at is None else at)

    def observe_power(self, watts: Mapping[str, float]) -> None:
        """Record the last snapshot's readings (host -> watts); hosts without one drop out."""
        self.host_power.clear()
        for host, value in sorted(watts.items()):
            self.host_power.labels(host=host).set(value)
        self.power.set(sum(watts.values()))
        self.power_hosts.set(len(watts))

    def set_hosts(self, hosts_active: int, hosts_spare: int, hosts_off: int,
                  watts_saved: float) -> None:
        """The hosts by state and the watts saved, as the database last saw them."""
        for state, count in zip(HOST_STATES, (hosts_active, hosts_spare, hosts_off),
                                strict=True):
            self.hosts.labels(state=state).set(count)
        self.watts_saved.set(watts_saved)

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
