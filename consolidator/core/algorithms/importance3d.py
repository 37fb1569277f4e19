"""Algorithm III of paper 004: 3D bin packing of (vCPU, memory, importance) boxes.

Each movable instance is a box (vCPU, memory, weight), weight 2 if important and 1 if not,
and each host is a bin of W x H x D grid units (option ``bin``, the paper's 8 x 8 x 6). The
bins are packed with the heuristics H1 and H2 of Martello, Pisinger and Vigo (``mpv3d``), the
better of the two is kept, and the bins are then put on real hosts.

Unit mapping: one unit is 1/W of the host's *physical* CPUs (vcpus - reserved) and 1/H of its
physical memory (memory_mb - reserved); boxes are rounded up to whole units, at least one. The
grid is the hardware, the depth the paper's importance capacity: boxes may stack in depth and
sit side by side, so they "occupy the same resource constraint multiple times" and the geometry
only bounds the sum of cpu-share x memory-share x weight/D, important instances costing twice
as much room as the others. Placement's capacity (total - reserved) x allocation ratio, the
operator's own overbooking, is what Nova enforces, so it is checked as well, on every
resource, whenever a box enters a bin. With the paper's coarse 8 x 8 grid small flavors round
to one cell (at most 64 x D/2 important or 64 x D other instances per host) and Placement's
capacity usually binds first; a finer grid, e.g. (64, 64, 6), makes the geometry bite sooner.

Heterogeneous hosts: hosts of one availability zone are grouped into classes of equal capacity
and physical size; a class's bins use its own units and capacity, and the largest classes are
filled first. Each zone is packed on its own (instances never leave their zone).

Hard rules: pinned instances stay; a host holding one (or any host that may receive but not be
emptied) is a bin that already holds them, filled first since it stays on anyway. Hosts that
may not receive hold only pinned instances and are left alone. Hard anti-affinity members never
share a bin. Soft policies and rankings are not used.

Beyond the paper (option ``assign``, default True): the bins of a class go to that class's
hosts by a maximum-weight assignment (weight = instances of the bin already on the host), and a
kept host's bin is seeded with its own movable instances. ``assign=False`` is the paper's
pack-from-scratch: kept bins filled regardless of former host, bins mapped onto hosts in order.
Either way a repair then reverts every move whose source host stays on, while the placement
stays feasible, and a zone whose packing would not free a host is left as it is. With assign,
``repair.guided_whole_hosts`` then replays the result under the whole-host rule: the hosts
the packing emptied are emptied again, whole, each instance following its packed target when
still feasible and best fit otherwise, so every source host ends empty. Without assign the
result is the paper's own, a baseline whose migrations between hosts that stay on may have no
safe order: the planner then refuses it with "no safe order".
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from consolidator.core.algorithms.base import Packing, Problem
from consolidator.core.algorithms.mpv3d import EPS, Bin, Boxes, Pool, fill_bin, h1, h2
from consolidator.core.algorithms.repair import guided_whole_hosts
from consolidator.core.errors import UsageError
from consolidator.core.wording import agree, plural

#: The paper's bin: 8 vCPU units x 8 memory units x importance capacity 6.
PAPER_BIN = (8, 8, 6)
#: Importance weights: the depth of a box.
WEIGHT_IMPORTANT, WEIGHT_OTHER = 2, 1
HEURISTICS = {"h1": h1, "h2": h2}

Shape = tuple[int, int, int]


@dataclass(frozen=True)
class Zone:
    """One availability zone's part of the problem."""

    name: str
    hosts: np.ndarray                 # every host row in the zone
    items: np.ndarray                 # movable instances to pack
    kept: list[int]                   # hosts that stay on: bins that already hold pinned ones
    classes: list[np.ndarray]         # emptiable hosts of equal size, largest class first


def read_options(problem: Problem) -> tuple[Shape, bool, tuple[str, ...]]:
    """The bin shape, whether to assign bins to hosts, and the heuristics to try."""
    opts = problem.options
    raw = opts.get("bin", PAPER_BIN)
    if isinstance(raw, str):  # from the command line: -o bin=8x8x6
        raw = raw.lower().replace(",", "x").split("x")
    try:
        shape = tuple(int(v) for v in raw)
    except (TypeError, ValueError):
        shape = ()
    if len(shape) != 3 or min(shape) < 1:
        raise UsageError(f"importance-3d: bin must be three positive integers (W, H, D), "
                         f"got {opts.get('bin')!r}")
    heuristic = str(opts.get("heuristic", "best"))
    if heuristic not in ("best", *HEURISTICS):
        raise UsageError(f"importance-3d: heuristic must be best, h1 or h2, got {heuristic!r}")
    chosen = tuple(HEURISTICS) if heuristic == "best" else (heuristic,)
    return (shape[0], shape[1], shape[2]), bool(opts.get("assign", True)), chosen


def footprints(problem: Problem) -> np.ndarray:
    """(H, 2) physical CPUs and memory per host; Placement capacity where those are zero."""
    phys = np.array([(h.vcpus - h.reserved_vcpus, h.memory_mb - h.reserved_memory_mb)
                     for h in problem.cluster.hosts], dtype=np.float64).reshape(-1, 2)
    return np.where(phys > 0, phys, problem.capacity[:, :2])


def boxes_for(problem: Problem, footprint: np.ndarray, shape: Shape, groups: list[frozenset[int]],
              size: np.ndarray) -> Boxes:
    """Every instance's box in the units of a host with this footprint."""
    grid = np.array(shape[:2], dtype=np.float64)
    unit = np.where(footprint > 0, footprint / grid, np.inf)
    dims = np.empty((problem.n_instances, 3), dtype=np.int64)
    ratio = problem.demand[:, :2] / unit
    dims[:, :2] = np.maximum(np.ceil(ratio - EPS), 1)
    dims[:, :2] = np.where(np.isfinite(ratio), dims[:, :2], grid + 1)
    dims[:, 2] = np.where(problem.important, WEIGHT_IMPORTANT, WEIGHT_OTHER)
    return Boxes(dims=dims, demand=problem.demand, groups=groups, rank=problem.placement,
                 size=size)


def zones(problem: Problem) -> list[Zone]:
    """The problem split by availability zone, with kept hosts and host classes."""
    cluster = problem.cluster
    zone_names: dict[str, int] = {}
    for host in cluster.hosts:
        zone_names.setdefault(host.availability_zone, len(zone_names))
    names = {v: k for k, v in zone_names.items()}
    item_zone = problem.host_zone[problem.placement] if problem.n_instances else \
        np.zeros(0, dtype=np.int64)
    foot = footprints(problem)
    out = []
    for z in np.unique(problem.host_zone).tolist():
        hosts = np.flatnonzero(problem.host_zone == z)
        on_receiver = problem.receivers[problem.placement] if problem.n_instances else \
            np.zeros(0, dtype=bool)
        items = np.flatnonzero((item_zone == z) & problem.movable & on_receiver)
        kept = [h for h in hosts.tolist() if problem.receivers[h] and not problem.emptiable[h]]
        candidates = [h for h in hosts.tolist() if problem.emptiable[h] and problem.receivers[h]]
        by_size: dict[tuple[float, ...], list[int]] = {}
        for h in candidates:
            by_size.setdefault(tuple(problem.capacity[h].tolist() + foot[h].tolist()),
                               []).append(h)
        scale = np.maximum(problem.capacity[hosts].max(axis=0), EPS) if hosts.size else 1.0
        classes = sorted((np.array(v) for v in by_size.values()),
                         key=lambda c: (-float((problem.capacity[c[0]] / scale).sum()), c[0]))
        out.append(Zone(names.get(z, str(z)), hosts, items, kept, classes))
    return out


class Packer:
    """Packs one zone with one heuristic and puts the bins on hosts."""

    def __init__(self, problem: Problem, shape: Shape, assign: bool) -> None:
        self.problem = problem
        self.shape = shape
        self.assign = assign
        self.foot = footprints(problem)
        self.groups: list[frozenset[int]] = [frozenset()] * problem.n_instances
        for g, rows in enumerate(problem.anti_affinity):
            for i in rows.tolist():
                self.groups[i] = self.groups[i] | {g}
        scale = np.maximum(problem.capacity.max(axis=0), EPS) if problem.n_hosts else 1.0
        self.size = (problem.demand / scale).max(axis=1) if problem.n_instances else \
            np.zeros(0)
        self._boxes: dict[int, Boxes] = {}

    def boxes(self, host: int) -> Boxes:
        """The boxes in the units of a host (cached per host)."""
        if host not in self._boxes:
            self._boxes[host] = boxes_for(self.problem, self.foot[host], self.shape,
                                          self.groups, self.size)
        return self._boxes[host]

    def pack(self, zone: Zone, heuristic: str) -> dict[int, list[int]] | None:
        """Host -> instances packed on it, or None if some instance found no bin."""
        p = self.problem
        left = set(zone.items.tolist())
        result: dict[int, list[int]] = {}
        kept: dict[int, Bin] = {}
        for host in zone.kept:        # pinned instances first; with assign, then its own
            bin_ = Bin(self.shape, p.capacity[host])
            on_host = np.flatnonzero(p.placement == host)
            for i in on_host[~p.movable[on_host]].tolist():
                bin_.force(i, self.boxes(host))
            if self.assign:
                bin_ = fill_bin(bin_, Pool(self.boxes(host), sorted(left & set(on_host.tolist()))))
                left -= set(bin_.items)
            kept[host] = bin_
        for host, bin_ in kept.items():  # then topped up from anywhere: they stay on anyway
            bin_ = fill_bin(bin_, Pool(self.boxes(host), sorted(left)))
            left -= set(bin_.items)
            result[host] = [i for i in bin_.items if p.movable[i]]
        for hosts in zone.classes:
            if not left:
                break
            pool = Pool(self.boxes(int(hosts[0])), sorted(left))
            bins = HEURISTICS[heuristic](pool, self.shape, p.capacity[hosts[0]], len(hosts))
            left = set(pool.remaining())
            result.update(self.place(bins, hosts))
        return None if left else result

    def place(self, bins: list[Bin], hosts: np.ndarray) -> dict[int, list[int]]:
        """Put a class's bins on its hosts: by maximum-weight assignment, or in order."""
        if not bins:
            return {}
        if not self.assign:
            return {int(h): b.items for h, b in zip(hosts, bins, strict=False)}
        column = {int(h): j for j, h in enumerate(hosts.tolist())}
        weight = np.zeros((len(bins), len(hosts)))
        for b, bin_ in enumerate(bins):
            for i in bin_.items:
                j = column.get(int(self.problem.placement[i]))
                if j is not None:
                    weight[b, j] += 1
        from scipy.optimize import linear_sum_assignment  # 0.5 s to import: only when used

        rows, cols = linear_sum_assignment(weight, maximize=True)
        return {int(hosts[c]): bins[r].items for r, c in zip(rows, cols, strict=True)}


def repair(problem: Problem, target: np.ndarray, items: np.ndarray) -> list[int]:
    """Revert every move whose source host stays on while it stays feasible; return the rest."""
    used = np.zeros_like(problem.capacity)
    np.add.at(used, target, problem.demand)
    population = np.bincount(target, minlength=problem.n_hosts)
    groups_of: dict[int, list[int]] = {}
    counts: list[dict[int, int]] = []
    for g, rows in enumerate(problem.anti_affinity):
        count: dict[int, int] = {}
        for i in rows.tolist():
            groups_of.setdefault(i, []).append(g)
            count[int(target[i])] = count.get(int(target[i]), 0) + 1
        counts.append(count)
    moved = [i for i in items.tolist() if target[i] != problem.placement[i]]
    changed = True
    while changed:
        changed = False
        still = []
        for i in moved:
            src, dst = int(problem.placement[i]), int(target[i])
            demand = problem.demand[i]
            if population[src] == 0 or \
                    not np.all(used[src] + demand <= problem.capacity[src] + EPS) or \
                    any(counts[g].get(src, 0) for g in groups_of.get(i, ())):
                still.append(i)
                continue
            used[src] += demand
            used[dst] -= demand
            population[src] += 1
            population[dst] -= 1
            for g in groups_of.get(i, ()):
                counts[g][dst] -= 1
                counts[g][src] = counts[g].get(src, 0) + 1
            target[i] = src
            changed = True
        moved = still
    return [i for i in moved if population[problem.placement[i]] > 0]


def solve_zone(problem: Problem, packer: Packer, zone: Zone, heuristics: tuple[str, ...],
               target: np.ndarray, notes: list[str]) -> None:
    """Pack one zone with each heuristic and write the best result into target."""
    before = int(np.count_nonzero(np.bincount(problem.placement, minlength=problem.n_hosts)
                                  [zone.hosts]))
    best: tuple[int, int, str, np.ndarray, list[int]] | None = None
    for heuristic in heuristics:
        packed = packer.pack(zone, heuristic)
        if packed is None:
            continue
        trial = target.copy()
        for host, items in packed.items():
            trial[items] = host
        stuck = repair(problem, trial, zone.items)
        population = np.bincount(trial, minlength=problem.n_hosts)[zone.hosts]
        key = (int(np.count_nonzero(population)), int(np.count_nonzero(
            trial[zone.items] != problem.placement[zone.items])))
        if best is None or key < best[:2]:
            best = (*key, heuristic, trial, stuck)
    if best is None:
        notes.append(f"importance-3d: zone {zone.name}: the bins cannot hold every instance; "
                     f"left as it is")
        return
    hosts_after, migrations, heuristic, trial, stuck = best
    if hosts_after >= before:
        notes.append(f"importance-3d: zone {zone.name}: packing frees no host; left as it is")
        return
    target[zone.items] = trial[zone.items]
    names = [h.name for h in problem.cluster.hosts]
    notes.append(f"importance-3d: zone {zone.name}: {heuristic.upper()} packs "
                 f"{plural(before, 'host')} "
                 f"into {hosts_after} with {plural(migrations, 'migration')}")
    if stuck:
        shown = ", ".join(f"{problem.cluster.instances[i].name} ({names[problem.placement[i]]}"
                          f" -> {names[target[i]]})" for i in stuck[:5])
        more = f" and {len(stuck) - 5} more" if len(stuck) > 5 else ""
        notes.append(f"importance-3d: zone {zone.name}: "
                     f"{plural(len(stuck), 'move')} {agree(len(stuck), 'leaves', 'leave')} "
                     f"hosts that stay on, to make room; they cannot be reverted: {shown}{more}")


def importance3d(problem: Problem) -> Packing:
    """Pack each zone with H1 and H2, assign bins to hosts, repair; return the best."""
    shape, assign, heuristics = read_options(problem)
    target = problem.placement.copy()
    notes: list[str] = []
    if problem.n_instances:
        packer = Packer(problem, shape, assign)
        for zone in zones(problem):
            if zone.items.size:
                solve_zone(problem, packer, zone, heuristics, target, notes)
    # The paper's pack-from-scratch (assign=False) is kept verbatim, as a baseline: it moves
    # instances between hosts that stay on, which the whole-host rule would revert entirely.
    left_whole: list[int] = []
    if assign:
        target, left_whole = guided_whole_hosts(problem, target)
    names = [h.name for h in problem.cluster.hosts]
    if left_whole:
        notes.append(f"left whole, since emptying them needed moves that do not free a host: "
                     f"{', '.join(names[h] for h in left_whole[:5])}"
                     + (f" and {len(left_whole) - 5} more" if len(left_whole) > 5 else ""))
    before = np.bincount(problem.placement, minlength=problem.n_hosts)
    after = np.bincount(target, minlength=problem.n_hosts)
    emptied = tuple(int(h) for h in np.flatnonzero((before > 0) & (after == 0)))
    return Packing(target=target, emptied=emptied, notes=tuple(notes))
