"""High/low quality CPU zones of zoned-bestfit (paper 004), as configured per host.

A spec is 'HQ x RATIO, LQ x RATIO', where HQ and LQ are CPU counts or percentages of the
host's usable vCPUs: '24x2.0,35x8.0' is the paper's, '40%x2,55%x8' scales with the host.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping

import numpy as np

from consolidator.model import Cluster

DEFAULT_SPEC = "24x2.0,35x8.0"

ZoneSpec = tuple[tuple[float, bool, float], tuple[float, bool, float]]


def parse_zone_spec(text: str) -> ZoneSpec:
    """Parse 'HQxRATIO,LQxRATIO'; counts may be percentages. ValueError says what is wrong."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2:
        raise ValueError("expected 'HQ_CPUSxRATIO,LQ_CPUSxRATIO', e.g. 24x2.0,35x8.0")
    zones = []
    for part in parts:
        count, sep, ratio = part.lower().partition("x")
        if not sep:
            raise ValueError(f"{part!r}: expected CPUSxRATIO")
        percent = count.strip().endswith("%")
        try:
            number = float(count.strip().rstrip("%"))
            factor = float(ratio)
        except ValueError:
            raise ValueError(f"{part!r}: CPUS and RATIO must be numbers") from None
        if number < 0 or factor <= 0:
            raise ValueError(f"{part!r}: CPUS must be >= 0 and RATIO > 0")
        zones.append((number, percent, factor))
    return zones[0], zones[1]


def zones_for_cluster(cluster: Cluster, section: Mapping[str, str]) -> np.ndarray:
    """(H, 4) [hq_cpus, hq_ratio, lq_cpus, lq_ratio] per host: the first matching glob, else
    'default', else the paper's 24x2.0,35x8.0. Zones larger than the host shrink to fit."""
    patterns = [(k, parse_zone_spec(v)) for k, v in section.items() if k != "default"]
    default = parse_zone_spec(section.get("default", DEFAULT_SPEC))
    rows = []
    for host in cluster.hosts:
        spec = next((s for k, s in patterns if fnmatch.fnmatchcase(host.name, k)), default)
        cpus = max(host.vcpus - host.reserved_vcpus, 0)
        (hq, hq_pct, hq_ratio), (lq, lq_pct, lq_ratio) = spec
        hq_cpus = cpus * hq / 100 if hq_pct else hq
        lq_cpus = cpus * lq / 100 if lq_pct else lq
        if hq_cpus + lq_cpus > cpus > 0:
            shrink = cpus / (hq_cpus + lq_cpus)
            hq_cpus, lq_cpus = hq_cpus * shrink, lq_cpus * shrink
        rows.append((hq_cpus, hq_ratio, lq_cpus, lq_ratio))
    return np.array(rows, dtype=np.float64).reshape(len(cluster.hosts), 4)
