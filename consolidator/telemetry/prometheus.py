"""Per-instance CPU usage statistics from a Prometheus HTTP API, for UCaC (paper 003).

Two instant queries, configurable, each returning one sample per instance: the mean and the
standard deviation of its CPU usage in vCPUs over a window. The instance's UUID is read from a
label (default ``instance_uuid``). Statistics are stored with each snapshot and pooled over the
cloud's recent snapshots when planning. A third query counts each instance's samples in the
window: until it holds ``min_samples``, its deviation is taken as at least its mean
(core/short_window.py).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import requests

from consolidator.core.errors import CloudError
from consolidator.core.model import Cluster
from consolidator.core.wording import plural

LOG = logging.getLogger(__name__)

DEFAULT_MEAN_QUERY = "avg_over_time(consolidator:instance_cpu_usage:vcpus[7d])"
DEFAULT_STD_QUERY = "stddev_over_time(consolidator:instance_cpu_usage:vcpus[7d])"


@dataclass(frozen=True)
class PrometheusSource:
    """Where and how to ask Prometheus."""

    url: str
    mean_query: str = DEFAULT_MEAN_QUERY
    std_query: str = DEFAULT_STD_QUERY
    instance_label: str = "instance_uuid"
    timeout: float = 10.0
    #: An instant query whose result lists the instances with fresh data (a plain selector
    #: of the recorded usage: a series that went stale is absent); others are left out, so
    #: that an exporter that stopped answering does not pass its last values off as current.
    #: Empty: no such check.
    fresh_query: str = ""
    #: An instance with fewer samples than this in the deviation's window (count_query)
    #: gets at least its mean as deviation; 0: no such prior.
    min_samples: int = 0
    #: An instant query counting each instance's samples; empty: the std query with
    #: stddev_over_time replaced by count_over_time.
    count_query: str = ""

    def samples_query(self) -> str:
        """The query that counts each instance's samples, or "" if none can be derived."""
        if self.count_query:
            return self.count_query
        if "stddev_over_time(" in self.std_query:
            return self.std_query.replace("stddev_over_time(", "count_over_time(")
        return ""


@dataclass(frozen=True)
class UsageRead:
    """Each instance's usage statistics, and which of them took the short-window prior."""

    usage: dict[str, dict[str, float]]
    short: tuple[str, ...] = ()


def _api(source: PrometheusSource, path: str, params: dict[str, Any], query: str
         ) -> dict[str, Any]:
    """GET one API path; its "data", or CloudError in one line."""
    url = source.url.rstrip("/") + path
    try:
        response = requests.get(url, params=params, timeout=source.timeout)
    except requests.RequestException as exc:
        raise CloudError(f"telemetry {source.url}: cannot query Prometheus: "
                         f"{str(exc).splitlines()[0]}") from None
    try:
        body = response.json()
    except ValueError:
        raise CloudError(f"telemetry {source.url}: HTTP {response.status_code}, not the "
                         f"Prometheus API (check [telemetry] prometheus_url)") from None
    if response.status_code != 200 or body.get("status") != "success":
        raise CloudError(f"telemetry {source.url}: query {query!r} failed: "
                         f"{body.get('error') or response.status_code}")
    return body.get("data") or {}


def query_vector(source: PrometheusSource, query: str) -> dict[str, float]:
    """Run an instant query; return {instance uuid: value} for finite sample values."""
    data = _api(source, "/api/v1/query", {"query": query}, query)
    if data.get("resultType") != "vector":
        raise CloudError(f"telemetry {source.url}: query {query!r} gave a "
                         f"{data.get('resultType')}, not an instant vector")
    out: dict[str, float] = {}
    for sample in data.get("result") or []:
        uuid = (sample.get("metric") or {}).get(source.instance_label)
        try:
            value = float(sample["value"][1])
        except (KeyError, IndexError, TypeError, ValueError):
            continue
        if uuid and math.isfinite(value):
            out[uuid] = value
    return out


def _matrix(source: PrometheusSource, query: str, start: float, end: float, step: float
            ) -> list[tuple[dict[str, str], list[tuple[float, float]]]]:
    """A range query's series: (labels, [(time, value)] with the finite values)."""
    data = _api(source, "/api/v1/query_range",
                {"query": query, "start": start, "end": end, "step": step}, query)
    if data.get("resultType") != "matrix":
        raise CloudError(f"telemetry {source.url}: query {query!r} gave a "
                         f"{data.get('resultType')}, not a range vector")
    out = []
    for series in data.get("result") or []:
        points = []
        for point in series.get("values") or []:
            try:
                at, value = float(point[0]), float(point[1])
            except (IndexError, TypeError, ValueError):
                continue
            if math.isfinite(value):
                points.append((at, value))
        out.append((series.get("metric") or {}, points))
    return out


def query_range(source: PrometheusSource, query: str, start: float, end: float, step: float
                ) -> dict[str, list[tuple[float, float]]]:
    """Run a range query (times in Unix seconds); return {instance uuid: [(time, value)]}
    with the finite values, in time order."""
    out: dict[str, list[tuple[float, float]]] = {}
    for labels, points in _matrix(source, query, start, end, step):
        uuid = labels.get(source.instance_label)
        if uuid and points:
            out.setdefault(uuid, []).extend(points)
    return {uuid: sorted(points) for uuid, points in out.items()}


def query_total(source: PrometheusSource, query: str, start: float, end: float, step: float
                ) -> list[tuple[float, float]]:
    """Run a range query and add its series up per time: [(time, total)] in time order
    (for a cloud-wide sum such as the capacity watch's trend)."""
    totals: dict[float, float] = {}
    for _labels, points in _matrix(source, query, start, end, step):
        for at, value in points:
            totals[at] = totals.get(at, 0.0) + value
    return sorted(totals.items())


def read_usage(source: PrometheusSource) -> UsageRead:
    """{instance uuid: {"cpu_mean", "cpu_std"}} for every instance with a mean (and fresh
    data, when the source says how to tell); an instance with fewer than min_samples
    samples in its window gets at least its mean as deviation, and is named in short."""
    means = query_vector(source, source.mean_query)
    if source.fresh_query:
        fresh = query_vector(source, source.fresh_query)
        means = {uuid: mean for uuid, mean in means.items() if uuid in fresh}
    stds = query_vector(source, source.std_query)
    usage = {uuid: {"cpu_mean": mean, "cpu_std": max(stds.get(uuid, 0.0), 0.0)}
             for uuid, mean in means.items()}
    counting = source.samples_query() if source.min_samples > 0 else ""
    if not counting or not usage:
        return UsageRead(usage)
    import numpy as np

    from consolidator.core.short_window import short_window_std

    counts = query_vector(source, counting)
    uuids = list(usage)
    mean = np.array([usage[u]["cpu_mean"] for u in uuids])
    std = np.array([usage[u]["cpu_std"] for u in uuids])
    samples = np.array([counts.get(u, 0.0) for u in uuids])
    guarded = short_window_std(mean, std, samples, source.min_samples)
    short = tuple(u for u, n in zip(uuids, samples, strict=True) if n < source.min_samples)
    for uuid, value in zip(uuids, guarded, strict=True):
        usage[uuid]["cpu_std"] = float(value)
    if short:
        LOG.info("telemetry: %s of %d short of [telemetry] min_samples = %d in their window "
                 "(%s): their deviation is taken as at least their mean",
                 plural(len(short), "instance"), len(uuids), source.min_samples, counting)
    return UsageRead(usage, short)


def fetch_usage(source: PrometheusSource) -> dict[str, dict[str, float]]:
    """read_usage's statistics alone."""
    return read_usage(source).usage


def with_usage(cluster: Cluster, usage: Mapping[str, Mapping[str, float]]) -> Cluster:
    """The cluster with each instance's usage statistics set where known."""
    from dataclasses import replace

    instances = tuple(replace(i, usage=dict(usage[i.id])) if i.id in usage else i
                      for i in cluster.instances)
    return replace(cluster, instances=instances)


def pool(samples: Iterable[Mapping[str, float]]) -> dict[str, float] | None:
    """Pool (mean, std) statistics of several windows of equal weight into one."""
    items = [s for s in samples if s and "cpu_mean" in s]
    if not items:
        return None
    mean = sum(s["cpu_mean"] for s in items) / len(items)
    second = sum(s.get("cpu_std", 0.0) ** 2 + s["cpu_mean"] ** 2 for s in items) / len(items)
    return {"cpu_mean": mean, "cpu_std": math.sqrt(max(second - mean ** 2, 0.0))}


def pooled_cluster(cluster: Cluster, history: Mapping[str, Sequence[Mapping[str, float]]]
                   ) -> Cluster:
    """The cluster with each instance's usage pooled over its history (its own first)."""
    pooled: dict[str, dict[str, float]] = {}
    for inst in cluster.instances:
        windows = ([inst.usage] if inst.usage else []) + list(history.get(inst.id, []))
        stats = pool(windows)
        if stats is not None:
            pooled[inst.id] = stats
    return with_usage(cluster, pooled)
