"""A plan for a reviewer: hosts before and after as bars, waves, power-off, bounds, saving."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from consolidator.model import Cluster
from consolidator.plan import PlanDraft, StoredPlan
from consolidator.render import bar, kv, table

#: Migrations listed in the table view before it says how many more there are.
MAX_LISTED = 60


def usage_after(cluster: Cluster, plan: StoredPlan) -> tuple[np.ndarray, np.ndarray]:
    """(H, R) usage and (H,) population once the plan's migrations are done."""
    host_of = cluster.placement.copy()
    index, hosts = cluster.instance_index, cluster.host_index
    for m in plan.draft.migrations:
        if m.instance_id in index:
            host_of[index[m.instance_id]] = hosts[m.destination]
    used = np.zeros_like(cluster.capacity)
    if len(host_of):
        np.add.at(used, host_of, cluster.demand)
    return used, np.bincount(host_of, minlength=len(cluster.hosts))


def render_plan(plan: StoredPlan, cluster: Cluster, *, approve_hint: bool = True) -> str:
    """The table view of a plan against the snapshot it was made from."""
    d = plan.draft
    after, population = usage_after(cluster, plan)
    off, spare = set(d.power_off), set(d.spare_hosts)
    capacity = cluster.capacity
    rows = []
    for h, host in enumerate(cluster.hosts):
        action = "power off" if host.name in off else "spare" if host.name in spare else (
            "left on: no BMC" if host.name in d.left_on else
            "off already" if host.power == "off" else "")
        rows.append([host.name, _use(cluster.usage[h, 0], after[h, 0], capacity[h, 0]),
                     _use(cluster.usage[h, 1], after[h, 1], capacity[h, 1]),
                     f"{int(cluster.population[h])} -> {int(population[h])}", action])
    out = [kv([("plan", plan.id), ("status", plan.status), ("cloud", plan.cloud),
               ("snapshot", plan.snapshot_id), ("algorithm", d.algorithm),
               ("ranking", d.ranking or "(the algorithm's own)"),
               ("created", plan.created_at.isoformat(timespec="seconds"))]), "",
           table(["HOST", "VCPU USED (BEFORE -> AFTER)", "RAM USED (BEFORE -> AFTER)",
                  "INSTANCES", "ACTION"], rows, align="lllll"), ""]
    if d.choice:
        out.append(f"chosen: {d.choice.get('why', '')}")
        out.append("")
    out.append(_waves(d.migrations))
    out.append("")
    hours = 24
    out.append(kv([
        ("hosts", f"{d.hosts_before} -> {d.hosts_after} (lower bound {d.lower_bound})"),
        ("migrations", f"{len(d.migrations)} (lower bound {d.migrations_lower_bound} "
                       f"for the {len(off) + len(spare)} hosts freed)"),
        ("power off", ", ".join(d.power_off) or "nothing"),
        ("spare hosts", ", ".join(d.spare_hosts) or f"none (asked for {d.spare})"),
        ("estimated saving", f"{d.watts_saved:.0f} W = {d.watts_saved * hours / 1000:.1f} kWh "
                             f"a day ({energy_basis(d)})"),
    ]))
    if d.notes:
        out += ["", "notes:"] + [f"  - {n}" for n in d.notes]
    if plan.status == "proposed" and approve_hint:
        out += ["", f"approve with: consolidator plan approve {plan.id}"]
    return "\n".join(out)


def energy_basis(d: PlanDraft) -> str:
    """Which hosts' saving is measured by their BMCs and which falls back to idle watts."""
    measured = d.measured_hosts
    rest = [h for h in d.power_off if h not in measured]
    parts = []
    if measured:
        parts.append("measured: " + ", ".join(f"{h} {d.host_watts[h]:.0f} W" for h in measured))
    if rest or not parts:
        parts.append(f"{d.idle_watts:.0f} W idle per host"
                     + (f", no reading: {', '.join(rest)}" if measured and rest else ""))
    if d.objective != "hosts":
        parts.append(f"objective {d.objective}")
    return "; ".join(parts)


def _use(before: float, after: float, cap: float) -> str:
    b, a = (before / cap if cap else 0.0), (after / cap if cap else 0.0)
    return f"{bar(b, 10)} {b:4.0%} -> {bar(a, 10)} {a:4.0%}"


def _waves(migrations: tuple) -> str:
    if not migrations:
        return "migrations: none"
    by_wave: dict[int, list] = defaultdict(list)
    for m in migrations:
        by_wave[m.wave].append(m)
    lines = [f"migrations: {len(migrations)} in {len(by_wave)} waves "
             f"(a wave starts when the one before it is done)"]
    listed = 0
    for wave in sorted(by_wave):
        moves = by_wave[wave]
        sources = Counter(m.source for m in moves)
        lines.append(f"  wave {wave}: {len(moves)} migrations from {len(sources)} hosts")
        for m in moves:
            if listed >= MAX_LISTED:
                break
            lines.append(f"    {m.instance_name:<24} {m.source} -> {m.destination}")
            listed += 1
    if listed < len(migrations):
        lines.append(f"  ... and {len(migrations) - listed} more (--format json lists all)")
    return "\n".join(lines)
