"""A plan for a reviewer: hosts before and after as bars, waves, power-off, bounds, saving."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np

from consolidator.core.model import Cluster
from consolidator.core.plan import PlanDraft, StoredPlan
from consolidator.core.planner import MIGRATE_ONLY
from consolidator.core.wording import plural
from consolidator.render import bar, kv, table
from consolidator.render.fit import fit_kv, fit_table, fit_text, widest

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


def render_plan(plan: StoredPlan, cluster: Cluster, *, approve_hint: bool = True,
                full: bool = False, stored: bool = True, width: int = 0) -> str:
    """The table view of a plan against the snapshot it was made from (full: every move;
    stored: False for a dry run's plan, which no later command can show; width: the
    terminal's, which the host table is fitted to by narrowing, then dropping, its bars)."""
    d = plan.draft
    out = [kv([("plan", plan.id), ("status", plan.status), ("cloud", plan.cloud),
               ("snapshot", plan.snapshot_id), ("algorithm", d.algorithm),
               ("ranking", d.ranking or "(the algorithm's own)"),
               ("created", plan.created_at.isoformat(timespec="seconds"))]), "",
           _host_table(plan, cluster, width), ""]
    if d.choice:
        out.append(fit_text(f"chosen: {d.choice.get('why', '')}", width))
        out.append("")
    out.append(fit_text(_waves(d.migrations, plan.id if stored else None, full), width))
    out.append("")
    out.append(fit_kv(_rollback_summary(d) if d.algorithm == "rollback"
                      else _summary(d, set(d.power_off), set(d.spare_hosts)), width))
    if d.notes:
        out += ["", "notes:"] + [fit_text(f"  - {n}", width) for n in d.notes]
    if plan.status == "proposed" and approve_hint:
        out += ["", f"approve with: consolidator plan approve {plan.id}"]
    return "\n".join(out)


def _host_table(plan: StoredPlan, cluster: Cluster, width: int) -> str:
    """Each host's use before and after, population and action; bars of 10, else 5, else
    none, whichever first fits `width` (0: 10); without bars, headings and actions wrap."""
    d = plan.draft
    after, population = usage_after(cluster, plan)
    off, spare, on = set(d.power_off), set(d.spare_hosts), set(d.power_on)
    capacity = cluster.capacity
    text = ""
    for bars in (10, 5, 0):
        rows = []
        for h, host in enumerate(cluster.hosts):
            action = ("drain, power off" if host.name in off else "drain, disable") \
                if host.name in d.drain else \
                "power off" if host.name in off else "spare" if host.name in spare else (
                "power on" if host.name in on else
                _left_on(d.left_on[host.name]) if host.name in d.left_on else
                "off already" if host.power == "off" else "")
            rows.append([host.name,
                         _use(cluster.usage[h, 0], after[h, 0], capacity[h, 0], bars),
                         _use(cluster.usage[h, 1], after[h, 1], capacity[h, 1], bars),
                         f"{int(cluster.population[h])} -> {int(population[h])}", action])
        headers = ["HOST", "VCPU USED (BEFORE -> AFTER)", "RAM USED (BEFORE -> AFTER)",
                   "INSTANCES", "ACTION"]
        text = table(headers, rows, align="lllll")
        if width <= 0 or widest(text) <= width:
            break
        if not bars:
            text = fit_table(headers, rows, "lllll", width, wraps={4: 10})
    return text


def _summary(d: PlanDraft, off: set[str], spare: set[str]) -> str:
    hours = 24
    return kv([
        ("hosts", f"{d.hosts_before} -> {d.hosts_after} (lower bound {d.lower_bound}: "
                  f"{_above(d.hosts_after - d.lower_bound)})"),
        ("migrations", f"{len(d.migrations)} (lower bound {d.migrations_lower_bound} "
                       f"for the {plural(len(off) + len(spare), 'host')} freed)"),
        ("power off", ", ".join(d.power_off) or (
            "nothing (a migrate-only plan: no BMC file)"
            if MIGRATE_ONLY in d.left_on.values() else "nothing")),
        ("spare hosts", ", ".join(d.spare_hosts) or f"none (asked for {d.spare})"),
        ("estimated saving", f"{d.watts_saved:.0f} W = {d.watts_saved * hours / 1000:.1f} kWh "
                             f"a day ({energy_basis(d)})"),
    ])


def _above(distance: int) -> str:
    """How far a plan is from its best known lower bound, in words."""
    return "at the bound" if distance <= 0 else f"{plural(distance, 'host')} above it"
def _left_on(why: str) -> str:
    """The ACTION of a host the plan empties and leaves on."""
    return "left on: migrate-only" if why == MIGRATE_ONLY else "left on: no BMC"


def _rollback_summary(d: PlanDraft) -> str:
    """A rollback has no bound to meet and saves nothing: what it powers on and moves back."""
    target = d.options.get("target_snapshot")
    return kv([("hosts on", f"{d.hosts_before} -> {d.hosts_after}"),
               ("power on", ", ".join(d.power_on) or "nothing"),
               ("migrations", f"{len(d.migrations)}"
                              + (f" back to their hosts in snapshot {target}" if target else ""))])


def saving_summary(d: PlanDraft, powered_off: int) -> str:
    """Hosts on, hosts powered off with what each draws (measured or idle_watts), and the
    saving that adds up from them (the demo said '270 W idle each', then '2050 W')."""
    hours = 24
    return kv([("hosts on", f"{d.hosts_before} -> {d.hosts_after} "
                            f"(lower bound {d.lower_bound})"),
               ("powered off", f"{plural(powered_off, 'host')} ({energy_basis(d)})"),
               ("saving", f"{d.watts_saved:.0f} W = {d.watts_saved * hours / 1000:.1f} kWh "
                          f"a day = {d.watts_saved * hours * 365 / 1e6:.1f} MWh a year")])


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


def _use(before: float, after: float, cap: float, bars: int = 10) -> str:
    b, a = (before / cap if cap else 0.0), (after / cap if cap else 0.0)
    if bars <= 0:
        return f"{b:4.0%} -> {a:4.0%}"
    return f"{bar(b, bars)} {b:4.0%} -> {bar(a, bars)} {a:4.0%}"


#: How the executor orders the waves (execution/move_queue.py): a wave does not wait for the
#: whole wave before it, only for the moves that free or fill its moves' hosts.
WAVE_ORDER = "a move starts once the earlier waves' moves from or to its hosts are done"


def _waves(migrations: tuple, plan_id: str | None, full: bool) -> str:
    """Every wave's count; its moves up to MAX_LISTED in all (every one if full)."""
    if not migrations:
        return "migrations: none"
    by_wave: dict[int, list] = defaultdict(list)
    for m in migrations:
        by_wave[m.wave].append(m)
    lines = [f"migrations: {len(migrations)} in {plural(len(by_wave), 'wave')} "
             f"({WAVE_ORDER})"]
    room = len(migrations) if full else MAX_LISTED
    for wave in sorted(by_wave):
        moves = by_wave[wave]
        sources = Counter(m.source for m in moves)
        lines.append(f"  wave {wave}: {plural(len(moves), 'migration')} "
                     f"from {plural(len(sources), 'host')}")
        shown = moves[:room]
        lines += [f"    {m.instance_name:<24} {m.source} -> {m.destination}" for m in shown]
        if len(shown) < len(moves):
            lines.append(f"    ... {len(moves) - len(shown)} more in wave {wave}")
        room -= len(shown)
    if not full and len(migrations) > MAX_LISTED:
        lines.append(f"  ({MAX_LISTED} of {plural(len(migrations), 'migration')} listed: "
                     + (f"'consolidator plan show {plan_id} --all' lists them all)"
                        if plan_id else "a dry run stores no plan to show them all)"))
    return "\n".join(lines)
