"""Relative CPU speed per host: a core of one host is not a core of any other.

Usage telemetry measures an instance's CPU in vCPUs of the host it runs on. With a relative
speed per host (1.0 for the reference hardware, 1.43 for one whose cores do 43 % more work),
usage measured on host A counts ``usage x speed(A) / speed(B)`` cores of host B. The speeds
come from a scenario's hosts (``cpu_speed:``, kept in snapshots), else from the
``[cpu_speed]`` section of the config, whose keys are ``default``, ``aggregate:NAME`` or a
host-name glob (first match in that order: glob, aggregate, default), like ``[zones]``.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping

import numpy as np

from consolidator.core.model import Cluster


def parse_speed(key: str, value: str) -> float:
    """A speed from the config: a positive finite number; ValueError naming the problem."""
    try:
        speed = float(value)
    except ValueError:
        raise ValueError("expected a positive number, the host's CPU speed relative to the "
                         "reference (1.0)") from None
    if not math.isfinite(speed) or speed <= 0:
        raise ValueError("expected a positive number, the host's CPU speed relative to the "
                         "reference (1.0)")
    if not key:
        raise ValueError("empty key: give default, aggregate:NAME or a host-name glob")
    return speed


def host_speeds(cluster: Cluster, section: Mapping[str, str] | None = None,
                scenario: Mapping[str, float] | None = None) -> np.ndarray:
    """(H,) relative speed per host: the scenario's value, else the config's glob, aggregate
    or default entry, else 1.0."""
    section = dict(section or {})
    scenario = dict(scenario or {})
    default = parse_speed("default", section["default"]) if "default" in section else 1.0
    globs = [(k, parse_speed(k, v)) for k, v in section.items()
             if k != "default" and not k.startswith("aggregate:")]
    aggregates = {k.split(":", 1)[1]: parse_speed(k, v) for k, v in section.items()
                  if k.startswith("aggregate:")}
    out = np.empty(len(cluster.hosts))
    for row, host in enumerate(cluster.hosts):
        speed = scenario.get(host.name)
        if speed is None:
            speed = next((s for pattern, s in globs if fnmatch.fnmatchcase(host.name, pattern)),
                         None)
        if speed is None:
            speed = next((aggregates[a] for a in host.aggregates if a in aggregates), default)
        out[row] = float(speed)
    return out


def scale_usage(cluster: Cluster, speeds: np.ndarray, mean: np.ndarray, std: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """Usage in reference cores: each instance's usage times its current host's speed."""
    if not len(cluster.instances):
        return mean, std
    factor = speeds[cluster.placement]
    return mean * factor, std * factor


def speed_map(cluster: Cluster, section: Mapping[str, str] | None) -> dict[str, float]:
    """host name -> relative speed, for UsageModel.speed: a host's own cpu_speed (a scenario's)
    where it is not 1.0, else the config's; empty when no host has a speed."""
    own = {h.name: h.cpu_speed for h in cluster.hosts if h.cpu_speed != 1.0}
    if not section and not own:
        return {}
    return dict(zip((h.name for h in cluster.hosts),
                    host_speeds(cluster, section, scenario=own).tolist(), strict=True))
