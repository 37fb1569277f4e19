"""Instances no host can take: larger, in some resource class, than every host's capacity."""

from __future__ import annotations

import numpy as np

from consolidator.core.model import Cluster


def too_large(cluster: Cluster) -> list[str]:
    """One line per instance that asks more of some class than any host offers, naming the
    instance, its host, the class and the largest capacity (empty when all fit somewhere)."""
    if not cluster.hosts or not cluster.instances:
        return []
    largest = cluster.capacity.max(axis=0)
    over = cluster.demand > largest + 1e-9
    lines = []
    for i in np.nonzero(over.any(axis=1))[0]:
        inst = cluster.instances[int(i)]
        rc = int(np.nonzero(over[i])[0][0])
        name = cluster.resource_classes[rc]
        lines.append(f"instance {inst.name} on {inst.host} asks {cluster.demand[i, rc]:g} "
                     f"{name}, more than any host offers (largest {largest[rc]:g}): it can "
                     f"never move, and {inst.host} shows over 100 % of its {name}")
    return lines
