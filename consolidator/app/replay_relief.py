"""Relief on a replay's simulated clock: what the daemon's relief watch does every [relief]
interval, run against the replayed cloud (the 'consolidator' policy of app/replay.py).

At each interval, each VM's usage is its mean over the [relief] cpu_mean_query's window and
its deviation over the cpu_std_query's (the range in brackets, e.g. [10m] and [1h], in the
trace's steps), as Prometheus would give them; the relief is drafted as the daemon drafts it
(app/relief.py), stored, approved and run by the real executor against the replay's
simulated cloud, whose every host has a BMC.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import numpy as np

from consolidator.app.relief import draft_relief
from consolidator.app.review import approve
from consolidator.app.settings import relief_settings
from consolidator.app.snapshots import store_inventory
from consolidator.core.replay.cloud_model import cluster_at, usage_window
from consolidator.store.plans import save_plan

_RANGE = re.compile(r"\[(\d+)([smhd])\]")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def window_steps(query: str, step_s: float, default_s: float) -> int:
    """The samples a query's range selector spans ([10m] at 300 s steps: 2), at least 1."""
    found = _RANGE.search(query)
    seconds = int(found.group(1)) * _UNIT[found.group(2)] if found else default_s
    return max(int(round(seconds / step_s)), 1)


def relieve_step(policy: Any, k: int, now: datetime, placement: np.ndarray) -> np.ndarray:
    """Relief at sample k if [relief] interval falls due; the placement after it. `policy` is
    the replay's ConsolidatorPolicy (its trace, hosts, instances, host state and run_plan)."""
    from consolidator.openstack.inventory import Inventory

    settings = relief_settings(policy.ctx.config)
    step_s = policy.trace.step_s
    every = max(int(round(settings.interval / step_s)), 1) if settings.interval > 0 else 0
    if not every or k % every or k == 0:
        return placement
    means = window_steps(settings.mean_query, step_s, 600)
    stds = window_steps(settings.std_query, step_s, 3600)
    mean, _ = usage_window(policy.trace, k - means + 1, k)
    _, std = usage_window(policy.trace, k - stds + 1, k)
    cluster = cluster_at(policy.hosts, policy.instances, placement, policy.state, mean, std)
    draft, _relief = draft_relief(policy.ctx, cluster, settings, powerable=list)
    if not (draft.migrations or draft.power_on):
        return placement
    policy.reliefs = getattr(policy, "reliefs", 0) + 1
    snap = store_inventory(policy.ctx, Inventory(cluster, "replay", "2.88", cloud="replay"))
    plan = save_plan(policy.ctx.engine(), draft, cloud=snap.info.cloud,
                     snapshot_id=snap.info.id, supersede=False)
    approve(policy.ctx, plan.id, reason="relief", supersede=False)
    return policy.run_plan(snap.cluster, plan.id, f"relief at {now:%H:%M}", placement)
