"""An operator's own usage history from Prometheus, as a trace to replay ('simulate trace
--prometheus URL --start T --end T').

The recorded usage (``consolidator:instance_cpu_usage:vcpus``, vCPUs in use per instance, see
consolidator/deploy/prometheus/recording-rules.yml) is read with a range query at the replay's
step; each instance's size from the libvirt exporter's ``libvirt_domain_info_virtual_cpus``
and ``libvirt_domain_info_maximum_memory_bytes`` (the largest over the range). A vCPU counts
``mips_per_vcpu`` MIPS, so the trace runs on any host model; utilisation is usage over vCPUs,
at most 100 %. An instance absent at a step (not yet created, deleted, or its exporter not
answering) uses nothing then.
"""

from __future__ import annotations

import numpy as np

from consolidator.core.errors import UsageError
from consolidator.core.replay.trace import Trace
from consolidator.telemetry.prometheus import PrometheusSource, query_range

USAGE = "consolidator:instance_cpu_usage:vcpus"
_SIZE = ('max by (instance_uuid) (max_over_time(label_replace({metric} * on (instance, domain) '
         'group_left (instance_id) libvirt_domain_openstack_info, "instance_uuid", "$1", '
         '"instance_id", "(.+)")[{range}s:{step}s]))')
#: RAM of an instance whose exporter gives none, in MB.
DEFAULT_RAM_MB = 2048.0


def _sizes(source: PrometheusSource, metric: str, end: float, span: float, step: float
           ) -> dict[str, float]:
    query = _SIZE.format(metric=metric, range=int(max(span, step)), step=int(step))
    return query_vector_at(source, query, end)


def query_vector_at(source: PrometheusSource, query: str, at: float) -> dict[str, float]:
    """An instant query evaluated at a time: {instance uuid: value}."""
    points = query_range(source, query, at, at, 1)
    return {uuid: values[-1][1] for uuid, values in points.items() if values}


def prometheus_trace(source: PrometheusSource, start: float, end: float, *,
                     step: float = 300.0, mips_per_vcpu: float = 1000.0,
                     query: str = USAGE) -> Trace:
    """The instances' usage between two times (Unix seconds) as a trace."""
    if end <= start:
        raise UsageError("--end must be after --start")
    if step <= 0 or mips_per_vcpu <= 0:
        raise UsageError("the step and the MIPS per vCPU must be positive")
    series = query_range(source, query, start, end, step)
    if not series:
        raise UsageError(f"{source.url}: {query} has no data between {start:.0f} and "
                         f"{end:.0f}: check the recording rules and the time range")
    vcpus = _sizes(source, "libvirt_domain_info_virtual_cpus", end, end - start, step)
    memory = _sizes(source, "libvirt_domain_info_maximum_memory_bytes", end, end - start, step)
    uuids = sorted(series)
    times = np.arange(start, end + step / 2, step)
    usage = np.zeros((len(uuids), len(times)))
    for row, uuid in enumerate(uuids):
        for at, value in series[uuid]:
            col = int(round((at - start) / step))
            if 0 <= col < len(times):
                usage[row, col] = max(value, 0.0)
    size = np.array([vcpus.get(u) or max(float(usage[r].max()), 1.0)
                     for r, u in enumerate(uuids)])
    size = np.maximum(np.ceil(size), 1.0)
    ram = np.array([memory[u] / 2 ** 20 if memory.get(u) else DEFAULT_RAM_MB for u in uuids])
    return Trace(tuple(uuids), np.clip(usage / size[:, None], 0.0, 1.0),
                 size * mips_per_vcpu, ram, float(step))

