"""Property: every plan of every algorithm passes the checker, on random clusters."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from consolidator.core.algorithms.catalog import ALGORITHMS
from consolidator.core.checker import MoveSpec, check_plan
from consolidator.core.constraints import Rules
from consolidator.core.model import Cluster, Host, Instance, ServerGroup
from consolidator.core.planner import PlanSettings, plan_cluster

ALGORITHM_NAMES = ALGORITHMS.names()


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    """Random valid clusters: 2-8 hosts in 1-2 zones, instances that fit where they are."""
    n_hosts = draw(st.integers(2, 8))
    hosts = []
    for h in range(n_hosts):
        hosts.append(Host(
            name=f"h{h}", vcpus=draw(st.sampled_from([4, 8, 16])),
            memory_mb=draw(st.sampled_from([8192, 16384, 32768])), disk_gb=500,
            cpu_allocation_ratio=draw(st.sampled_from([1.0, 2.0])),
            availability_zone=draw(st.sampled_from(["az1", "az1", "az2"])),
            status=draw(st.sampled_from(["enabled"] * 5 + ["disabled"]))))
    free = {h.name: list(h.capacity) for h in hosts}
    instances = []
    for i in range(draw(st.integers(0, 24))):
        host = draw(st.sampled_from(hosts)).name
        size = (draw(st.sampled_from([1, 2, 4])), draw(st.sampled_from([512, 2048, 4096])), 10)
        if all(f >= s for f, s in zip(free[host], size, strict=True)):
            free[host] = [f - s for f, s in zip(free[host], size, strict=True)]
            meta = draw(st.sampled_from([{}, {}, {}, {"consolidator:important": "false"},
                                         {"consolidator:exclude": "true"}]))
            instances.append(Instance(name=f"v{i}", host=host, vcpus=size[0],
                                      memory_mb=size[1], disk_gb=size[2], metadata=meta,
                                      status=draw(st.sampled_from(["ACTIVE"] * 6 + ["SHUTOFF"]))))
    groups = []
    ids = [i.id for i in instances]
    if len(ids) >= 2 and draw(st.booleans()):
        # Anti-affinity over members that are already on distinct hosts.
        seen, members = set(), []
        for inst in instances:
            if inst.host not in seen and len(members) < 3:
                seen.add(inst.host)
                members.append(inst.id)
        groups.append(ServerGroup("aa", "anti-affinity", tuple(members)))
    if len(ids) >= 2 and draw(st.booleans()):
        groups.append(ServerGroup("soft", "soft-anti-affinity", tuple(ids[:2])))
    return Cluster(hosts=tuple(hosts), instances=tuple(instances), server_groups=tuple(groups))


@pytest.mark.parametrize("algorithm", ALGORITHM_NAMES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster=clusters(), spare=st.integers(0, 2), limit=st.integers(1, 3))
def test_every_plan_passes_the_checker(algorithm: str, cluster: Cluster, spare: int,
                                       limit: int) -> None:
    settings_ = PlanSettings(rules=Rules(excluded_hosts=("h7",)), per_host_limit=limit)
    draft = plan_cluster(cluster, algorithm, settings=settings_, spare=spare)
    moves = [MoveSpec(m.instance_id, m.source, m.destination, m.wave) for m in draft.migrations]
    assert check_plan(cluster, moves, draft.power_off, rules=settings_.rules,
                      per_host_limit=limit) == []
    # Whole hosts only: every source ends empty (powered off or kept as a spare).
    freed = set(draft.power_off) | set(draft.spare_hosts)
    assert {m.source for m in draft.migrations} <= freed
    assert draft.hosts_after >= draft.lower_bound   # no plan beats a true lower bound
    assert draft.hosts_after == draft.hosts_before - len(draft.power_off)
