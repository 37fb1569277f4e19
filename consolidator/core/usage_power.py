"""Usage-driven power: power hosts on before usage needs them, and not in a flap.

The capacity watch counts usage at confidence, not only allocations: the powered hosts'
demand is their used capacity at confidence (UCaC, paper 003), in reference cores (usage x
the host's relative speed), counted one of two ways. Per host (the default): the sum of each
host's own UCaC, every host at its tail at once, which keeps spare hosts on for relief to
move into. Pooled: the UCaC of their instances' usage taken together (means summed,
variances pooled), which asks only whether enough hosts are on, so that one host over its
cores is relief's to move; right after a cycle has packed the hosts to their UCaC, the sum
per host exceeds the headroom and powers on hosts that stand empty until the next cycle,
the pooled demand does not. Its trend is the cloud's recent total usage, fitted by local
regression (a least-squares line with tricube weights over a window, as LR-MMT's Loess in
Beloglazov & Buyya 2012, section 6.2); the rise it predicts over the lookahead is added.
When that exceeds ``headroom`` x the powered hosts' cores x speed, hosts consolidator powered
off come on, the most efficient first, until it does not.

Cool-down rules keep power from flapping: a host powered on less than ``min_on_time`` ago is
not powered off, and no more than ``max_per_hour`` power actions (on and off) are started in
any hour. Pure: the use case (app/usage_power.py) reads usage, trend and journal.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

import numpy as np

from consolidator.core.constraints import UsageModel, build_problem
from consolidator.core.model import Cluster
from consolidator.core.plan import PlanDraft
from consolidator.core.rankings.ucac import ucac
from consolidator.core.wording import plural


def local_regression(times: Sequence[float], values: Sequence[float]) -> tuple[float, float]:
    """(value at the last time, slope per second) of a line fitted to the points with
    tricube weights that favour the newest (Loess at the window's end); slope 0 with fewer
    than 3 points."""
    t = np.asarray(times, dtype=float)
    v = np.asarray(values, dtype=float)
    if len(t) == 0:
        return 0.0, 0.0
    if len(t) < 3 or np.ptp(t) == 0:
        return float(v[-1]), 0.0
    span = (t[-1] - t[0]) * 1.0001
    weights = (1 - ((t[-1] - t) / span) ** 3) ** 3
    x = t - t[-1]
    sw, swx, swy = weights.sum(), (weights * x).sum(), (weights * v).sum()
    swxx, swxy = (weights * x * x).sum(), (weights * x * v).sum()
    det = sw * swxx - swx * swx
    if det <= 0:
        return float(v[-1]), 0.0
    slope = (sw * swxy - swx * swy) / det
    intercept = (swy - slope * swx) / sw
    return float(intercept), float(slope)


def predicted_rise(times: Sequence[float], values: Sequence[float], lookahead_s: float
                   ) -> float:
    """The rise of usage the trend predicts over the lookahead (0 when it falls)."""
    _, slope = local_regression(times, values)
    return max(slope * lookahead_s, 0.0)


@dataclass(frozen=True)
class Need:
    """What the capacity watch found: the powered hosts' demand at confidence and their
    capacity, in reference cores, and the predicted rise."""

    demand: float
    rise: float
    capacity: float
    headroom: float

    @property
    def short(self) -> float:
        """Cores missing under the headroom (0 when there is enough)."""
        return max(self.demand + self.rise - self.headroom * self.capacity, 0.0)

    def describe(self) -> str:
        """One line for the log."""
        return (f"usage at confidence {self.demand:.1f} cores + trend {self.rise:.1f} against "
                f"{self.headroom:.0%} of {self.capacity:.1f} powered cores")


def need_of(cluster: Cluster, usage: UsageModel, *, rise: float = 0.0,
            headroom: float = 1.0, pooled: bool = False) -> Need:
    """The usable powered hosts' demand (the sum of their UCaC at usage.confidence, or with
    pooled the UCaC of their instances' usage taken together, in reference cores) and
    capacity (cores x speed)."""
    assert usage.confidence is not None
    problem = build_problem(cluster, usage=usage)
    assert problem.usage_mean is not None and problem.usage_std is not None
    assert problem.cpu_limit is not None
    n = problem.n_hosts
    mu = np.bincount(problem.placement, weights=problem.usage_mean, minlength=n)
    var = np.bincount(problem.placement, weights=problem.usage_std ** 2, minlength=n)
    up = np.array([h.usable for h in cluster.hosts], dtype=bool)
    if pooled:
        demand = float(ucac(np.array([mu[up].sum()]),
                            np.array([max(float(var[up].sum()), 0.0)]), usage.confidence)[0])
    else:
        demand = float(ucac(mu, np.maximum(var, 0.0), usage.confidence)[up].sum())
    return Need(demand=demand, rise=rise,
                capacity=float(problem.cpu_limit[up].sum()), headroom=headroom)


def hosts_for_need(need: Need, candidates: Sequence[str], cores: Mapping[str, float]
                   ) -> list[str]:
    """The candidates, in order, to power on until the need is met (all of them if it
    cannot be)."""
    short = need.short
    chosen: list[str] = []
    for name in candidates:
        if short <= 1e-9:
            break
        chosen.append(name)
        short -= need.headroom * cores.get(name, 0.0)
    return chosen


@dataclass(frozen=True)
class CoolDown:
    """[power] min_on_time (seconds) and max_actions_per_hour (0: no cap)."""

    min_on_time_s: float = 0.0
    max_per_hour: int = 0

    def budget(self, actions: Sequence[datetime], now: datetime) -> int | None:
        """Power actions still allowed in the hour up to now (None: no cap)."""
        if self.max_per_hour <= 0:
            return None
        recent = sum(1 for at in actions if now - at < timedelta(hours=1))
        return max(self.max_per_hour - recent, 0)

    def holds(self, powered_on_at: Mapping[str, datetime], now: datetime) -> dict[str, str]:
        """Hosts powered on less than min_on_time ago -> why they stay on."""
        if self.min_on_time_s <= 0:
            return {}
        out = {}
        for host, at in powered_on_at.items():
            age = (now - at).total_seconds()
            if age < self.min_on_time_s:
                out[host] = (f"emptied, left on: powered on {age / 60:.0f} min ago, less than "
                             f"[power] min_on_time ({self.min_on_time_s / 60:g} min)")
        return out


def beyond_budget(budget: int) -> str:
    """Why a host the hour's budget of power actions cannot power off stays on."""
    return (f"emptied, left on: [power] max_actions_per_hour reached "
            f"({plural(budget, 'more action')} allowed this hour)")


def hold_power_off(draft: PlanDraft, holds: Mapping[str, str], budget: int | None
                   ) -> PlanDraft:
    """The draft with the power-offs the cool-down forbids left on (emptied), with why:
    hosts held by min_on_time, then those beyond the hour's budget of power actions."""
    keep = {h: holds[h] for h in draft.power_off if h in holds}
    allowed = [h for h in draft.power_off if h not in keep]
    if budget is not None and len(allowed) > budget:
        keep.update(dict.fromkeys(allowed[budget:], beyond_budget(budget)))
        allowed = allowed[:budget]
    if not keep:
        return draft
    return replace(draft, power_off=tuple(allowed), left_on={**draft.left_on, **keep},
                   hosts_after=draft.hosts_after + len(keep),
                   notes=(*draft.notes, f"cool-down: {', '.join(sorted(keep))} "
                                        f"{'stays' if len(keep) == 1 else 'stay'} on"))
