"""The energy objective: keep the hosts that draw least at idle for their size, empty the ones
that draw most (clouds with several hardware generations). Pure: no I/O.

Candidates: the algorithm as it is; over the hosts listed in efficiency order (idle watts
per share of the cloud's capacity, lowest first); the same, keeping the k most efficient
hosts (never emptied, the only ones filled with the hosts that stay on anyway); and firstfit
over the hosts in efficiency order. The plan that powers off the most idle watts wins (fewer
migrations break ties); every candidate is a checked plan from the planner.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from consolidator.core.algorithms.base import Problem, Ranker
from consolidator.core.algorithms.catalog import get_algorithm
from consolidator.core.constraints import Rules, build_problem
from consolidator.core.model import Cluster
from consolidator.core.plan import PlanDraft
from consolidator.core.planner import PlanSettings, draft_from_packing

#: Keep counts tried above the smallest one whose capacity covers the demand.
EXTRA_KEEP_COUNTS = 6
#: Capacity headroom asked of the kept hosts before a count is tried (packing is not fluid).
HEADROOM = 1.05


def efficiency_order(problem: Problem, idle: Mapping[str, float], fallback: float
                     ) -> list[int]:
    """Host rows, most efficient first: idle watts over the host's mean share of the cloud's
    VCPU and memory capacity (ties: the larger host first)."""
    cap = problem.capacity[:, :2]
    share = (cap / np.maximum(cap.sum(axis=0), 1e-9)).mean(axis=1)
    names = [h.name for h in problem.cluster.hosts]
    watts = np.array([idle.get(n, fallback) for n in names])
    ratio = watts / np.maximum(share, 1e-12)
    return sorted(range(problem.n_hosts), key=lambda h: (ratio[h], -share[h], h))


def keep_counts(problem: Problem, order: list[int]) -> list[int]:
    """The numbers of efficient hosts to keep open that are worth trying."""
    columns = len(problem.cluster.resource_classes)
    demand = problem.demand[:, :columns].sum(axis=0) * HEADROOM
    usable = problem.powered & problem.receivers
    covered = np.zeros(columns)
    first = len(order)
    for k, host in enumerate(order, start=1):
        if usable[host]:
            covered = covered + problem.capacity[host, :columns]
        if np.all(covered + 1e-9 >= demand):
            first = k
            break
    return list(range(first, min(len(order), first + EXTRA_KEEP_COUNTS) + 1))


def in_efficiency_order(cluster: Cluster, idle: Mapping[str, float], fallback: float
                        ) -> Cluster:
    """The same cluster with its hosts listed most efficient first (orders that algorithms
    fill from the front and empty from the back then favour the efficient hosts)."""
    problem = build_problem(cluster, Rules())
    order = efficiency_order(problem, idle, fallback)
    return Cluster(hosts=tuple(cluster.hosts[h] for h in order), instances=cluster.instances,
                   server_groups=cluster.server_groups)


def energy_plan(cluster: Cluster, algorithm: str, idle: Mapping[str, float], *,
                fallback: float, settings: PlanSettings | None = None, spare: int = 0,
                options: Mapping[str, Any] | None = None, ranking: Ranker | None = None,
                no_bmc: Collection[str] = ()) -> PlanDraft:
    """The checked plan that saves the most idle watts (idle: host -> watts; hosts missing
    count at `fallback`): `algorithm` as it is, over the hosts in efficiency order, and kept
    to the k most efficient hosts; and firstfit over the hosts in efficiency order."""
    settings = settings or PlanSettings()
    host_watts = {h.name: float(idle.get(h.name, fallback)) for h in cluster.hosts}

    def scored(draft: PlanDraft) -> tuple[float, int]:
        return (sum(host_watts[h] for h in draft.power_off), -len(draft.migrations))

    def make(c: Cluster, name: str, keep: np.ndarray | None = None,
             given: Mapping[str, Any] | None = None) -> PlanDraft:
        algo = get_algorithm(name)
        problem = build_problem(c, settings.rules, spare=spare,
                                options=options if given is None else given,
                                ranking=ranking, usage=settings.usage)
        restricted = problem
        if keep is not None:
            stays_on = problem.powered & ~problem.emptiable
            restricted = replace(problem, receivers=problem.receivers & (keep | stays_on),
                                 emptiable=problem.emptiable & ~keep)
        return draft_from_packing(problem, algo.run(restricted), algorithm=algo.name,
                                  ranking=ranking.name if ranking else None,
                                  settings=settings, no_bmc=no_bmc)

    ordered = in_efficiency_order(cluster, host_watts, fallback)
    # firstfit's own order is largest first; over the efficiency order it keeps that order.
    in_order = {**(options or {}), "order": "given"} if get_algorithm(algorithm).name == \
        "firstfit" else None
    candidates = [make(cluster, algorithm), make(ordered, algorithm, given=in_order)]
    problem = build_problem(ordered, settings.rules, spare=spare, options=options,
                            usage=settings.usage)
    for k in keep_counts(problem, list(range(problem.n_hosts))):
        keep = np.zeros(problem.n_hosts, dtype=bool)
        keep[:k] = True
        candidates.append(make(ordered, algorithm, keep))
    if get_algorithm(algorithm).name != "firstfit":
        candidates.append(make(ordered, "firstfit", given={"order": "given"}))
    best = max(candidates, key=scored)
    own = max((d for d in candidates if d.algorithm == get_algorithm(algorithm).name),
              key=scored)
    notes = [f"objective energy: keeps the hosts that draw least at idle for their size; "
             f"{scored(best)[0]:.0f} W idle powered off"]
    if best is not own:
        notes.append(f"objective energy: firstfit over the hosts in efficiency order saves "
                     f"{scored(best)[0] - scored(own)[0]:.0f} W more than {own.algorithm}'s "
                     f"best, so it made this plan")
    return replace(best, objective="energy", notes=best.notes + tuple(notes))
