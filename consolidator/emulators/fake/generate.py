"""Synthetic heterogeneous clouds for benchmarks and tests (scenario documents)."""

from __future__ import annotations

import random
from typing import Any

#: Host models: vcpus, memory_mb, disk_gb, cpu_allocation_ratio.
HOST_MODELS = [(32, 131072, 1000, 4.0), (48, 196608, 1500, 4.0), (64, 262144, 2000, 4.0),
               (96, 393216, 3000, 2.0), (128, 524288, 4000, 2.0)]
#: Flavors: name, vcpus, memory_mb, disk_gb, weight.
FLAVORS = [("m1.tiny", 1, 1024, 10, 20), ("m1.small", 1, 2048, 20, 25),
           ("m1.medium", 2, 4096, 40, 25), ("m1.large", 4, 8192, 80, 15),
           ("m1.xlarge", 8, 16384, 160, 8), ("r1.large", 2, 16384, 40, 5),
           ("c1.xlarge", 16, 16384, 80, 2)]


def generate(hosts: int, per_host: float = 10.0, seed: int = 1, fill: float = 0.5,
             models: list[tuple[int, int, int, float]] | None = None) -> dict[str, Any]:
    """A scenario of `hosts` hosts of the given models (default: five mixed ones) with about
    `per_host` instances each.

    Instances go to random hosts that still have room, so no host starts over capacity; `fill`
    caps how full (fraction of the tightest resource) any host gets.
    """
    rng = random.Random(seed)
    doc: dict[str, Any] = {"name": f"synthetic-{hosts}", "hosts": [], "instances": []}
    free = []
    for n in range(hosts):
        vcpus, mem, disk, ratio = rng.choice(models or HOST_MODELS)
        doc["hosts"].append({"name": f"cmp{n:05d}", "vcpus": vcpus, "memory_mb": mem,
                             "disk_gb": disk, "cpu_allocation_ratio": ratio})
        free.append([vcpus * ratio * fill, mem * fill, disk * fill])
    weights = [f[4] for f in FLAVORS]
    open_hosts = list(range(hosts))
    for k in range(int(hosts * per_host)):
        name, vcpus, mem, disk, _ = rng.choices(FLAVORS, weights)[0]
        for _attempt in range(8):
            if not open_hosts:
                return doc
            h = rng.choice(open_hosts)
            room = free[h]
            if room[0] >= vcpus and room[1] >= mem and room[2] >= disk:
                room[0] -= vcpus
                room[1] -= mem
                room[2] -= disk
                doc["instances"].append({"name": f"vm{k:07d}", "host": f"cmp{h:05d}",
                                         "vcpus": vcpus, "memory_mb": mem, "disk_gb": disk,
                                         "flavor": name})
                break
            if room[0] < 1 or room[1] < 1024:
                open_hosts.remove(h)
    return doc
