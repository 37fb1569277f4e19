"""What each page shows, made from the API's documents: the hosts grouped and counted by
state, a plan's hosts before and after and its moves by wave, a job's moves as the journal
records them."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from markupsafe import Markup

#: The recorded states of a host, in the order of the legend, with their CSS class.
STATES = {"in service": "in-service", "draining": "draining", "drained": "drained",
          "emptying": "emptying", "powering off": "powering-off", "off": "off",
          "powering on": "powering-on", "held by the operator": "held"}


def state_of(host: dict[str, Any]) -> str:
    """A host's recorded state; a host consolidator never touched is in service, or off
    when its power reads off."""
    recorded = host.get("recorded_state") or host.get("state")
    if recorded in STATES:
        return str(recorded)
    return "off" if host.get("power") == "off" else "in service"


@dataclass
class Tile:
    name: str
    state: str
    css: str
    zone: str
    aggregates: Sequence[str]
    instances: int
    usage: str
    title: str


def _amount(value: float) -> str:
    return f"{value:g}" if value == int(value) else f"{value:.1f}"


def usage_of(host: dict[str, Any]) -> tuple[str, str]:
    """A host's usage from the newest snapshot: the words on its tile (CPU and memory in use
    as a share of Placement's capacity, which a screen reader reads with the rest of the
    tile), and the amounts in full for its tooltip; the vCPUs alone when the API gives no
    usage."""
    cpu, cpu_cap = host.get("vcpus_used"), host.get("vcpus_capacity")
    mem, mem_cap = host.get("memory_mb_used"), host.get("memory_mb_capacity")
    if cpu is None or mem is None or not cpu_cap or not mem_cap:
        return (f"{host['vcpus']} vCPU" if host.get("vcpus") else ""), ""
    return (f"CPU {round(100 * cpu / cpu_cap)}% · RAM {round(100 * mem / mem_cap)}%",
            f"CPU {_amount(cpu)} of {_amount(cpu_cap)} vCPUs, memory "
            f"{_amount(mem / 1024)} of {_amount(mem_cap / 1024)} GiB in use")


def tile(host: dict[str, Any]) -> Tile:
    state = state_of(host)
    usage, amounts = usage_of(host)
    zone = host.get("availability_zone") or "(no zone)"
    aggregates = tuple(host.get("aggregates") or ())
    title = f"zone {zone}" + (f", aggregates {', '.join(aggregates)}" if aggregates else "")
    title += f"; {amounts}" if amounts else ""
    return Tile(host["name"], state, STATES[state], zone, aggregates,
                int(host.get("instances") or 0), usage, title)


def tiles_markup(tiles: Iterable[Tile]) -> Markup:
    """The tiles as one piece of HTML: 10,000 of them are written in one pass, not through
    the template engine's per-value escaping (tools/bench/dashboard_hosts.py). Usage is text
    only: a meter or an inline-styled bar per tile made 10,000 tiles 3 to 5 times slower to
    lay out and paint."""
    parts = []
    for t in tiles:
        parts.append(f'<li class="tile s-{t.css}" title="{escape(t.title)}"><b>'
                     f'{escape(t.name)}</b><span>{t.state} · {t.instances} inst.</span>'
                     f'<span>{escape(t.usage)}</span></li>')
    return Markup("".join(parts))


@dataclass
class HostsPage:
    groups: list[tuple[str, int, Markup]]
    counts: list[tuple[str, str, int]]
    zones: list[str]
    aggregates: list[str]
    shown: int
    total: int


def hosts_page(hosts: Iterable[dict[str, Any]], *, zone: str = "",
               aggregate: str = "") -> HostsPage:
    """The tiles, grouped by zone, of the hosts in the zone and aggregate asked (all when
    empty), with the count of each state among them."""
    tiles = [tile(h) for h in hosts]
    zones = sorted({t.zone for t in tiles})
    aggregates = sorted({a for t in tiles for a in t.aggregates})
    shown = [t for t in tiles if (not zone or t.zone == zone) and
             (not aggregate or aggregate in t.aggregates)]
    groups: dict[str, list[Tile]] = defaultdict(list)
    for t in sorted(shown, key=lambda t: (t.zone, t.name)):
        groups[t.zone].append(t)
    counted = Counter(t.state for t in shown)
    counts = [(state, css, counted.get(state, 0)) for state, css in STATES.items()]
    return HostsPage([(name, len(members), tiles_markup(members))
                      for name, members in groups.items()],
                     counts, zones, aggregates, len(shown), len(tiles))


@dataclass
class HostChange:
    name: str
    before: int
    after: int
    leaves: int
    arrives: int
    powered_off: bool


@dataclass
class PlanPage:
    figures: list[tuple[str, Any]]
    hosts: list[HostChange]
    waves: list[tuple[int, list[dict[str, Any]]]]
    #: The most instances a host holds before or after: the bars' full width.
    scale: int = 1


def plan_page(plan: dict[str, Any], snapshot_hosts: Sequence[dict[str, Any]]) -> PlanPage:
    """Per host, instances before and after; the moves by wave; the figures."""
    moves = list(plan.get("migrations") or ())
    leaves = Counter(m["source"] for m in moves)
    arrives = Counter(m["destination"] for m in moves)
    off = set(plan.get("power_off") or ())
    before = {h["name"]: int(h.get("instances") or 0) for h in snapshot_hosts}
    names = sorted(set(before) | set(leaves) | set(arrives) | off)
    hosts = [HostChange(n, before.get(n, 0), before.get(n, 0) - leaves[n] + arrives[n],
                        leaves[n], arrives[n], n in off) for n in names]
    hosts.sort(key=lambda h: (not (h.leaves or h.arrives or h.powered_off), h.name))
    waves: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for m in moves:
        waves[int(m.get("wave") or 1)].append(m)
    hb, ha = plan.get("hosts_before"), plan.get("hosts_after")
    figures = [("Hosts freed", (hb - ha) if hb is not None and ha is not None else None),
               ("Hosts before", hb), ("Hosts after", ha),
               ("Lower bound on hosts", plan.get("lower_bound")),
               ("Migrations", len(moves)),
               ("Lower bound on migrations", plan.get("migrations_lower_bound")),
               ("Watts saved", plan.get("watts_saved")), ("Waves", len(waves)),
               ("Hosts to power off", len(off))]
    scale = max([1, *(max(h.before, h.after) for h in hosts)])
    return PlanPage(figures, hosts, sorted(waves.items()), scale)


@dataclass
class MoveState:
    instance: str
    source: str
    destination: str
    wave: int
    state: str = "waiting"


@dataclass
class JobMoves:
    waves: list[tuple[int, list[MoveState]]] = field(default_factory=list)
    done: int = 0
    total: int = 0


def job_moves(plan: dict[str, Any] | None, journal: Iterable[dict[str, Any]]) -> JobMoves:
    """The plan's moves by wave, each with the state of its newest journal row."""
    if not plan:
        return JobMoves()
    seen: dict[str, str] = {}
    for entry in sorted(journal, key=lambda e: int(e.get("id") or 0)):
        if entry.get("action") == "migrate":
            seen[str(entry.get("target"))] = str(entry.get("state"))
    waves: dict[int, list[MoveState]] = defaultdict(list)
    for m in plan.get("migrations") or ():
        state = seen.get(str(m.get("instance_id"))) or seen.get(str(m.get("instance_name")))
        waves[int(m.get("wave") or 1)].append(MoveState(
            str(m.get("instance_name") or m.get("instance_id")), m["source"], m["destination"],
            int(m.get("wave") or 1), state or "waiting"))
    total = sum(len(v) for v in waves.values())
    done = sum(1 for v in waves.values() for m in v if m.state == "succeeded")
    return JobMoves(sorted(waves.items()), done, total)
