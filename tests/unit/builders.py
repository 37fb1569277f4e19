"""Small clusters for the planner's tests."""

from __future__ import annotations

from consolidator.core.model import Cluster, Host, Instance, ServerGroup


def hosts(*specs: tuple[str, int, int], **kw: object) -> tuple[Host, ...]:
    """Hosts from (name, vcpus, memory_mb); disk is ample, ratios 1.0."""
    return tuple(Host(name=n, vcpus=c, memory_mb=m, disk_gb=10_000, **kw)  # type: ignore[arg-type]
                 for n, c, m in specs)


def vm(name: str, host: str, vcpus: int = 1, memory_mb: int = 1024, **kw: object) -> Instance:
    """An ACTIVE instance with 10 GB of disk."""
    return Instance(name=name, host=host, vcpus=vcpus, memory_mb=memory_mb, disk_gb=10,
                    **kw)  # type: ignore[arg-type]


def cluster(host_list: tuple[Host, ...], vms: list[Instance],
            groups: tuple[ServerGroup, ...] = ()) -> Cluster:
    """A validated cluster."""
    return Cluster(hosts=host_list, instances=tuple(vms), server_groups=groups)
