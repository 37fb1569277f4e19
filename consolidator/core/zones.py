"""High/low quality CPU zones of zoned-bestfit (paper 004), as configured per host or aggregate.

A spec is 'HQ x RATIO, LQ x RATIO', where HQ and LQ are CPU counts or percentages of the
host's usable vCPUs: '24x2.0,35x8.0' is the paper's, '40%x2,55%x8' scales with the host.

The keys of [zones], and which one a host gets (the first rule that applies wins):

1. a host-name glob (any key other than 'default' and 'aggregate:NAME') that matches the
   host's name, the first such key in config order;
2. 'aggregate:NAME', the first such key in config order whose Nova host aggregate NAME holds
   the host (Host.aggregates, read from os-aggregates or the scenario);
3. 'default';
4. none: the host's zones are the cloud's own, its dedicated (PCPU) and shared (VCPU)
   Placement inventories, and a host without PCPU is one zone, its whole capacity.

A spec may also be a preset name: 'paper' is the paper's ALTO split, 24x2.0,35x8.0.

Globs and aggregate names are case-sensitive, as Nova's names are (the config keeps the case
of [zones] keys); the words 'default' and 'aggregate:' are not.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping

import numpy as np

from consolidator.core.model import Cluster, Host

#: Named zone specs: [zones] default = paper gives the split of paper 004's ALTO cloud.
PRESETS = {"paper": "24x2.0,35x8.0"}
#: The prefix of a [zones] key that names a host aggregate instead of a host-name glob.
AGGREGATE_PREFIX = "aggregate:"

ZoneSpec = tuple[tuple[float, bool, float], tuple[float, bool, float]]


def parse_zone_spec(text: str) -> ZoneSpec:
    """Parse 'HQxRATIO,LQxRATIO' (counts may be percentages) or a preset name such as
    'paper'. ValueError says what is wrong."""
    text = PRESETS.get(text.strip().lower(), text)
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2:
        raise ValueError("expected 'HQ_CPUSxRATIO,LQ_CPUSxRATIO', e.g. 24x2.0,35x8.0, or "
                         "a preset: paper")
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


def _is_aggregate_key(key: str) -> bool:
    return key[:len(AGGREGATE_PREFIX)].lower() == AGGREGATE_PREFIX


def check_zone_key(key: str) -> None:
    """Reject an 'aggregate:' key without a name. ValueError says what is wrong."""
    if _is_aggregate_key(key) and not key[len(AGGREGATE_PREFIX):].strip():
        raise ValueError("expected 'aggregate:NAME', the name of a host aggregate")


class ZoneRules:
    """The [zones] section split into host globs, aggregates and the default, in order."""

    def __init__(self, section: Mapping[str, str]) -> None:
        self.globs: list[tuple[str, ZoneSpec]] = []
        self.aggregates: list[tuple[str, ZoneSpec]] = []
        self.default: ZoneSpec | None = None
        for key, value in section.items():
            spec = parse_zone_spec(value)
            if key.lower() == "default":
                self.default = spec
            elif _is_aggregate_key(key):
                self.aggregates.append((key[len(AGGREGATE_PREFIX):].strip(), spec))
            else:
                self.globs.append((key, spec))

    def spec_for(self, host: Host) -> ZoneSpec | None:
        """The zone spec of one host: glob, then aggregate, then default; None: the cloud's."""
        for pattern, spec in self.globs:
            if fnmatch.fnmatchcase(host.name, pattern):
                return spec
        for name, spec in self.aggregates:
            if name in host.aggregates:
                return spec
        return self.default


def zone_row(host: Host, spec: ZoneSpec) -> tuple[float, float, float, float]:
    """[hq_cpus, hq_ratio, lq_cpus, lq_ratio] of a host; zones larger than it shrink to fit."""
    cpus = max(host.vcpus - host.reserved_vcpus, 0)
    (hq, hq_pct, hq_ratio), (lq, lq_pct, lq_ratio) = spec
    hq_cpus = cpus * hq / 100 if hq_pct else hq
    lq_cpus = cpus * lq / 100 if lq_pct else lq
    if hq_cpus + lq_cpus > cpus > 0:
        shrink = cpus / (hq_cpus + lq_cpus)
        hq_cpus, lq_cpus = hq_cpus * shrink, lq_cpus * shrink
    return (hq_cpus, hq_ratio, lq_cpus, lq_ratio)


def zones_for_cluster(cluster: Cluster, section: Mapping[str, str]) -> np.ndarray | None:
    """(H, 4) [hq_cpus, hq_ratio, lq_cpus, lq_ratio] per host, by the precedence above; NaN
    rows for hosts no rule names, and None when [zones] has no rule at all (the cloud's
    own zones everywhere)."""
    rules = ZoneRules(section)
    if rules.default is None and not rules.globs and not rules.aggregates:
        return None
    nan = (np.nan,) * 4
    rows = [zone_row(host, spec) if (spec := rules.spec_for(host)) is not None else nan
            for host in cluster.hosts]
    return np.array(rows, dtype=np.float64).reshape(len(cluster.hosts), 4)
