"""Constraints: which instances may move, which hosts may receive or be emptied, groups.

Turns a Cluster and the operator's rules into the arrays of a Problem. Nothing here does I/O:
the optional importance list arrives as text, read by app/settings.py.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from consolidator.core.algorithms.base import Problem, Ranker
from consolidator.core.cpu_speed import scale_usage
from consolidator.core.model import Cluster, Host, Instance
from consolidator.core.scope import Scope, left_alone
from consolidator.core.wording import agree, plural

FALSE_WORDS = {"false", "no", "0", "off", "low", "unimportant"}
TRUE_WORDS = {"true", "yes", "1", "on", "high", "important"}


@dataclass(frozen=True)
class Rules:
    """The operator's rules for what may move and where."""

    excluded_hosts: tuple[str, ...] = ()          # host-name globs: never touched
    exclude_key: str = "consolidator:exclude"     # instance metadata: "true" pins it
    importance_key: str = "consolidator:important"
    importance_extra_spec: str = "consolidator:important"
    unimportant: frozenset[str] = field(default_factory=frozenset)  # names or ids
    #: Only hosts inside it are touched (core/scope.py); None: every host.
    scope: Scope | None = None
    #: Host aggregates whose hosts are never touched (Masakari's reserved hosts, Blazar's
    #: freepool), and projects (ids) whose instances never move.
    excluded_aggregates: tuple[str, ...] = ()
    excluded_projects: frozenset[str] = field(default_factory=frozenset)


def left_alone_reason(host: Host, rules: Rules) -> str | None:
    """Why the rules keep a plan off this host (excluded, outside the scope), or None."""
    return left_alone(host, scope=rules.scope, excluded_hosts=rules.excluded_hosts,
                      excluded_aggregates=rules.excluded_aggregates)


@dataclass(frozen=True)
class UsageModel:
    """CPU usage statistics and the capacity model that uses them.

    confidence None: Placement capacity only. Otherwise the chance constraint of paper 003
    holds on every host that receives instances: sum(mu) + Phi^-1(confidence) sqrt(sum(s^2))
    <= the host's physical cores. Instances without telemetry get mu = fallback_mean x vCPUs
    and sigma = fallback_cov x mu.
    """

    confidence: float | None = None
    fallback_mean: float = 0.5
    fallback_cov: float = 0.5
    #: Relative CPU speed per host name (core/cpu_speed.py); a host not named runs at its own
    #: cpu_speed. Usage is then counted in reference cores and each host's limit is cores x
    #: speed.
    speed: Mapping[str, float] = field(default_factory=dict)


def usage_arrays(cluster: Cluster, model: UsageModel) -> tuple[np.ndarray, np.ndarray, int]:
    """(I,) usage means and standard deviations in vCPUs, and how many came from telemetry."""
    mean = np.empty(len(cluster.instances))
    std = np.empty(len(cluster.instances))
    measured = 0
    for row, inst in enumerate(cluster.instances):
        usage = inst.usage or {}
        if "cpu_mean" in usage:
            mean[row] = float(usage["cpu_mean"])
            std[row] = float(usage.get("cpu_std", 0.0))
            measured += 1
        else:
            mean[row] = inst.vcpus * model.fallback_mean
            std[row] = mean[row] * model.fallback_cov
    return mean, std, measured


def is_true(value: object) -> bool:
    """Whether a metadata value means yes."""
    return str(value).strip().lower() in TRUE_WORDS


def is_important(instance: Instance, rules: Rules) -> bool:
    """Importance from the list file, metadata, the flavor extra spec, then dedicated CPUs
    (hw:cpu_policy=dedicated or a PCPU allocation); default True."""
    if instance.name in rules.unimportant or instance.id in rules.unimportant:
        return False
    if is_dedicated(instance) and rules.importance_key not in instance.metadata \
            and rules.importance_extra_spec not in instance.flavor_extra_specs:
        return True
    for source in (instance.metadata.get(rules.importance_key),
                   instance.flavor_extra_specs.get(rules.importance_extra_spec)):
        if source is not None:
            word = str(source).strip().lower()
            if word in FALSE_WORDS:
                return False
            if word in TRUE_WORDS:
                return True
    return True


def is_dedicated(instance: Instance) -> bool:
    """Whether it runs on dedicated (pinned) CPUs: the paper's high-quality zone."""
    return (str(instance.flavor_extra_specs.get("hw:cpu_policy", "")).lower() == "dedicated"
            or instance.amount("PCPU") > 0)


def unit_problem(host: Host, rc: str, amount: float) -> str | None:
    """Why a host's inventory of rc cannot take an allocation of `amount`, or None."""
    inv = host.resources.get(rc)
    if inv is None or amount <= 0:
        return None
    if amount < inv["min_unit"] or amount > inv["max_unit"]:
        return f"{rc} {amount:g} is outside {inv['min_unit']:g}..{inv['max_unit']:g}"
    if amount % inv["step_size"]:
        return f"{rc} {amount:g} is not a multiple of {inv['step_size']:g}"
    return None


def trait_problem(host: Host, instance: Instance) -> str | None:
    """Why a host's traits do not suit an instance's flavor, or None."""
    missing = [t for t in instance.required_traits if t not in host.traits]
    if missing:
        return f"{host.name} lacks the required trait {missing[0]}"
    present = [t for t in instance.forbidden_traits if t in host.traits]
    if present:
        return f"{host.name} has the forbidden trait {present[0]}"
    return None


def compatibility_columns(cluster: Cluster) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(H, K) capacity and (I, K) demand columns that turn traits and inventory units into
    capacity: for each required trait, forbidden trait and refused allocation size, hosts
    that may not take such instances have 0 and the others room for every instance, while
    each such instance demands 1. Every packing algorithm then honours them as it honours
    capacity. Also one note per kind of column."""
    hosts, instances = cluster.hosts, cluster.instances
    room = float(len(instances) + 1)
    cap_cols: list[np.ndarray] = []
    dem_cols: list[np.ndarray] = []
    rules: tuple[tuple[str, Callable[[Host, str], bool]], ...] = (
        ("required", lambda h, t: t in h.traits), ("forbidden", lambda h, t: t not in h.traits))
    for policy, allowed in rules:
        wanted = sorted({t for i in instances for t in (
            i.required_traits if policy == "required" else i.forbidden_traits)})
        for trait in wanted:
            cap_cols.append(np.array([room if allowed(h, trait) else 0.0 for h in hosts]))
            dem_cols.append(np.array([1.0 if trait in (
                i.required_traits if policy == "required" else i.forbidden_traits) else 0.0
                for i in instances]))
    for rc in cluster.resource_classes[3:]:
        for amount in sorted({i.amount(rc) for i in instances} - {0.0}):
            refused = np.array([unit_problem(h, rc, amount) is not None for h in hosts])
            if refused.any():
                cap_cols.append(np.where(refused, 0.0, room))
                dem_cols.append(np.array([1.0 if i.amount(rc) == amount else 0.0
                                          for i in instances]))
    notes = []
    if cap_cols:
        notes.append(f"traits and inventory units: {len(cap_cols)} compatibility constraints "
                     f"(a flavor's required and forbidden traits, min_unit, max_unit, "
                     f"step_size)")
    if not cap_cols:
        return (np.zeros((len(hosts), 0)), np.zeros((len(instances), 0)), notes)
    return (np.stack(cap_cols, axis=1).reshape(len(hosts), len(cap_cols)),
            np.stack(dem_cols, axis=1).reshape(len(instances), len(dem_cols)), notes)


def parse_name_list(text: str) -> frozenset[str]:
    """Instance names or ids, one per line; '#' starts a comment."""
    return frozenset(line.split("#", 1)[0].strip() for line in text.splitlines()
                     if line.split("#", 1)[0].strip())


def pin_reason(instance: Instance, rules: Rules, hard_affinity: set[str]) -> str | None:
    """Why an instance may not move, or None if it may."""
    if is_true(instance.metadata.get(rules.exclude_key, "")):
        return f"{rules.exclude_key}=true"
    if instance.project_id and instance.project_id in rules.excluded_projects:
        return f"its project {instance.project_id} is excluded ([planner] excluded_projects)"
    if instance.status != "ACTIVE":      # the executor live-migrates only
        return f"it is {instance.status}"
    if instance.id in hard_affinity:
        return "it is in an affinity group (Nova refuses to move one member alone)"
    return None


def build_problem(cluster: Cluster, rules: Rules | None = None, *, spare: int = 0,
                  options: Mapping[str, Any] | None = None,
                  ranking: Ranker | None = None, usage: UsageModel | None = None) -> Problem:
    """The Problem of a cluster under the rules: arrays, masks, groups and usage."""
    rules = rules or Rules()
    usage = usage or UsageModel()
    hosts = cluster.hosts
    kept_off = [left_alone_reason(h, rules) for h in hosts]
    excluded = np.array([r is not None for r in kept_off], dtype=bool)
    usable = np.array([h.usable for h in hosts], dtype=bool)
    powered = np.array([h.power != "off" for h in hosts], dtype=bool)
    zones: dict[str, int] = {}
    host_zone = np.array([zones.setdefault(h.availability_zone, len(zones)) for h in hosts],
                         dtype=np.int64)
    hard_affinity = {m for g in cluster.server_groups
                     if g.policy == "affinity" and len(g.members) > 1 for m in g.members}
    reasons = [pin_reason(i, rules, hard_affinity) for i in cluster.instances]
    placement = cluster.placement
    movable = np.array([r is None for r in reasons], dtype=bool)
    if len(placement):
        movable &= usable[placement] & ~excluded[placement]
    blocked = np.zeros(len(hosts), dtype=bool)
    if len(placement):
        np.logical_or.at(blocked, placement, ~movable)
    notes = _pin_notes(cluster, reasons, kept_off, usable)
    mean, std, measured = usage_arrays(cluster, usage)
    unmeasured = len(cluster.instances) - measured
    if usage.confidence is not None or (measured and unmeasured):
        notes.append(f"CPU usage statistics: "
                     f"{plural(measured, 'instance')} from telemetry, {unmeasured} "
                     f"from the flavor fallback (mean {usage.fallback_mean:.0%} of vCPUs, "
                     f"coefficient of variation {usage.fallback_cov:g})")
    speeds = np.array([float(usage.speed.get(h.name, h.cpu_speed)) for h in hosts])
    if np.any(speeds != 1.0):
        mean, std = scale_usage(cluster, speeds, mean, std)
    cpu_limit = None
    if usage.confidence is not None:
        cpu_limit = np.array([max(h.vcpus - h.reserved_vcpus, 0) for h in hosts],
                             dtype=float) * speeds
        notes.append(f"capacity model ucac: a host takes instances while their CPU usage at "
                     f"confidence {usage.confidence:g} stays within its physical cores")
    index = cluster.instance_index
    extra_capacity, extra_demand, compat_notes = compatibility_columns(cluster)
    notes += compat_notes

    def rows(policy: str) -> tuple[np.ndarray, ...]:
        return tuple(np.array([index[m] for m in g.members], dtype=np.int64)
                     for g in cluster.server_groups if g.policy == policy and g.members)

    return Problem(
        cluster=cluster, capacity=np.hstack([cluster.capacity, extra_capacity]),
        demand=np.hstack([cluster.demand, extra_demand]),
        placement=placement.copy(), movable=movable, receivers=usable & ~excluded,
        emptiable=powered & usable & ~excluded & ~blocked, powered=powered,
        host_zone=host_zone,
        important=np.array([is_important(i, rules) for i in cluster.instances], dtype=bool),
        anti_affinity=rows("anti-affinity"), soft_affinity=rows("soft-affinity"),
        soft_anti_affinity=rows("soft-anti-affinity"), spare=spare,
        options=dict(options or {}), ranking=ranking, notes=tuple(notes),
        usage_mean=mean, usage_std=std, confidence=usage.confidence, cpu_limit=cpu_limit)


def _pin_notes(cluster: Cluster, reasons: list[str | None], kept_off: list[str | None],
               usable: np.ndarray) -> list[str]:
    """One line per host that cannot be emptied, saying why (one line for those outside the
    scope)."""
    notes = []
    outside = [h.name for h, r in zip(cluster.hosts, kept_off, strict=True)
               if r is not None and r.startswith("outside the scope")]
    if outside:
        scope = kept_off[cluster.host_index[outside[0]]] or ""
        notes.append(f"scope {scope.removeprefix('outside the scope ')}: "
                     f"{plural(len(outside), 'host')} outside it "
                     f"{agree(len(outside), 'is', 'are')} left as "
                     f"{agree(len(outside), 'it is', 'they are')}")
    for row, host in enumerate(cluster.hosts):
        why = kept_off[row]
        if why is not None:
            if not why.startswith("outside the scope"):
                notes.append(f"{host.name} is {why}: it is left as it is")
        elif not usable[row] and host.power != "off":
            notes.append(f"{host.name} is {host.status}/{host.state}: it is left as it is")
    pinned: dict[str, list[str]] = {}
    for inst, reason in zip(cluster.instances, reasons, strict=True):
        if reason is not None:
            pinned.setdefault(inst.host, []).append(f"{inst.name} ({reason})")
    for name, items in pinned.items():
        shown = ", ".join(items[:3]) + (f" and {len(items) - 3} more" if len(items) > 3 else "")
        notes.append(f"{name} cannot be emptied: {shown} may not move")
    return notes
