"""Per-instance CPU usage statistics from a Prometheus HTTP API, for UCaC (paper 003).

Two instant queries, configurable, each returning one sample per instance: the mean and the
standard deviation of its CPU usage in vCPUs over a window. The instance's UUID is read from a
label (default ``instance_uuid``). Statistics are stored with each snapshot and pooled over the
cloud's recent snapshots when planning.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import requests

from consolidator.core.errors import CloudError
from consolidator.core.model import Cluster

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


def query_vector(source: PrometheusSource, query: str) -> dict[str, float]:
    """Run an instant query; return {instance uuid: value} for finite sample values."""
    url = source.url.rstrip("/") + "/api/v1/query"
    try:
        response = requests.get(url, params={"query": query}, timeout=source.timeout)
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
    data = body.get("data") or {}
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


def fetch_usage(source: PrometheusSource) -> dict[str, dict[str, float]]:
    """{instance uuid: {"cpu_mean", "cpu_std"}} for every instance with a mean."""
    means = query_vector(source, source.mean_query)
    stds = query_vector(source, source.std_query)
    return {uuid: {"cpu_mean": mean, "cpu_std": max(stds.get(uuid, 0.0), 0.0)}
            for uuid, mean in means.items()}


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


def pooled_cluster(cluster: Cluster, history: Mapping[str, list[Mapping[str, float]]]
                   ) -> Cluster:
    """The cluster with each instance's usage pooled over its history (its own first)."""
    pooled: dict[str, dict[str, float]] = {}
    for inst in cluster.instances:
        windows = ([inst.usage] if inst.usage else []) + list(history.get(inst.id, []))
        stats = pool(windows)
        if stats is not None:
            pooled[inst.id] = stats
    return with_usage(cluster, pooled)
