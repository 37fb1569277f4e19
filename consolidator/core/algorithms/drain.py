"""Empty one more host after a packing: repack the instances already moving (beyond 002).

A vector packing heuristic stops when the instances of one more host do not fit, each where
it lands, in the other hosts' residual room. On clusters where one resource is about 99 %
full (disk on the mixed clusters of tools/bench) that room is scattered in pockets whose
other columns are used up, and no METAHVP heuristic reaches the bound + 1.

This pass takes the instances that already migrate (their source is a host the packing
emptied) plus those of one more host h, and packs them again, by demand shape, into the
hosts kept in use (less h) on top of the instances that stay where they are. Bin by bin,
the most binding room first, each bin takes the shapes that bring what it has taken closest
to its share of what is left to place: its share of the binding resource's room, applied to
every column (so a bin does not fill its binding column with items that leave the others
stranded, nor the reverse). Within a shape, an instance stays on the bin it was packed to
when it can. Moving instances in hard anti-affinity groups stay where the packing put them;
the drained host's grouped instances that land beside a member of their group swap with an
ungrouped instance of the same demand elsewhere.

Only the instances of h are added to the plan's migrations: the others moved already and get
another destination, so every source of the plan is still a host emptied whole, sources
receive nothing, and the migrations still run in any order. The result is checked against
every resource column, the zone and the hard anti-affinity groups, and rolled back if it
fails. It is skipped under the chance constraint (capacity model ucac) and when a ranking
chooses the targets (the repack would override its choices). Soft policies are not
consulted. Deterministic: no randomness, no clock, a fixed number of hosts tried.
"""

from __future__ import annotations

import numpy as np

from consolidator.core.algorithms.state import EPS, PackingState

#: Hosts tried, cheapest first, for each further host the pass empties.
MAX_TRIES = 2


def drain_more(state: PackingState, zone: int, scale: np.ndarray, stop_at: int = 0
               ) -> list[int]:
    """Empty kept hosts of the zone one at a time until stop_at hosts of the zone remain in
    use or no host among the MAX_TRIES cheapest empties; the hosts emptied, in order."""
    problem = state.problem
    if problem.confidence is not None or problem.ranking is not None:
        return []                       # the chance constraint, or targets a ranking chose
    emptied: list[int] = []
    while len(kept(state, zone)) > stop_at:
        for host in candidates(state, zone)[:MAX_TRIES]:
            if repack(state, zone, host, scale):
                emptied.append(host)
                break
        else:
            break
    return emptied


def kept(state: PackingState, zone: int) -> np.ndarray:
    """Hosts of the zone in use that may still receive."""
    p = state.problem
    return np.flatnonzero((p.host_zone == zone) & state.open & (state.population > 0))


def candidates(state: PackingState, zone: int) -> list[int]:
    """Kept emptiable hosts, fewest instances of their own (the migrations added) first,
    then least load."""
    p = state.problem
    rows = kept(state, zone)
    rows = rows[p.emptiable[rows]]
    own = np.bincount(p.placement[state.host_of == p.placement], minlength=p.n_hosts)[rows]
    load = ((p.capacity[rows] - state.free[rows]) / np.maximum(p.capacity[rows], EPS)).max(axis=1)
    result: list[int] = rows[np.lexsort((rows, load, own))].tolist()
    return result


def repack(state: PackingState, zone: int, host: int, scale: np.ndarray) -> bool:
    """Empty host by packing it and every moving instance of the zone again into the other
    kept hosts; all or nothing."""
    p = state.problem
    bins = kept(state, zone)
    bins = bins[bins != host]
    on_host = state.host_of == host
    grouped = np.zeros(p.n_instances, dtype=bool)
    for rows in p.anti_affinity:
        grouped[rows] = True                # stay where the packing put them, unless on host
    items = np.flatnonzero(((state.host_of != p.placement) & np.isin(state.host_of, bins)
                            & ~grouped) | on_host)
    if not bins.size or not p.movable[items].all():
        return False
    room = state.free[bins].copy()
    floating = items[~on_host[items]]
    np.add.at(room, np.searchsorted(bins, state.host_of[floating]), p.demand[floating])
    if np.any(room.sum(axis=0) + EPS < p.demand[items].sum(axis=0)):
        return False                                     # not even the volume fits
    shapes, inverse = np.unique(p.demand[items], axis=0, return_inverse=True)
    taken = fill(room / scale, shapes / scale, np.bincount(inverse.ravel(),
                                                           minlength=len(shapes)))
    if taken is None:
        return False
    start = state.mark()
    was_open = bool(state.open[host])
    state.close(host)
    for item, target in zip(items.tolist(), assign(state.host_of[items], inverse.ravel(), bins,
                                                   taken).tolist(), strict=True):
        state.move(item, target)
    separate(state, items[grouped[items]], items[~grouped[items]])
    if sound(state, bins):
        return True
    state.rollback(start)
    state.open[host] = was_open
    return False


def fill(room: np.ndarray, shapes: np.ndarray, count: np.ndarray) -> np.ndarray | None:
    """(bins, shapes) how many of each shape each bin takes, every item placed; or None.

    room and shapes are scaled. Bins go from the most room on the binding column (the one
    the items use the largest share of) down; each takes, one item at a time, the fitting
    shape that best covers what it still lacks of its share of what is left (Python floats:
    a handful of shapes and columns, where NumPy calls on tiny arrays cost more).
    """
    counts: list[int] = count.astype(np.int64).tolist()
    left = (count[:, None] * shapes).sum(axis=0)
    binding = int(np.argmax(left / np.maximum(room.sum(axis=0), EPS)))
    taken = np.zeros((len(room), len(shapes)), dtype=np.int64)
    vectors: list[list[float]] = shapes.tolist()
    norm: list[float] = np.sqrt((shapes * shapes).sum(axis=1)).clip(EPS).tolist()
    columns = range(shapes.shape[1])
    others = [r for r in columns if r != binding]
    rest: list[float] = left.tolist()
    total = float(room[:, binding].sum())
    active = [k for k in range(len(counts)) if counts[k]]
    for b in np.argsort(-room[:, binding], kind="stable").tolist():
        free: list[float] = room[b].tolist()
        share = min(free[binding] / total, 1.0) if total > EPS else 1.0
        total -= free[binding]
        want = [x * share for x in rest]
        while active:
            best, chosen = -np.inf, -1
            for k in active:
                d = vectors[k]
                if any(d[r] > free[r] + EPS for r in columns):
                    continue
                score = sum(d[r] * want[r] for r in columns if want[r] > 0) / norm[k] \
                    - 2.0 * sum(d[r] - want[r] for r in others if d[r] > want[r])
                if score > best:
                    best, chosen = score, k
            if chosen < 0:
                break
            d = vectors[chosen]
            m = min([counts[chosen]] + [int((free[r] + EPS) // d[r]) for r in columns if d[r] > 0]
                    + [int(want[r] // d[r]) for r in columns if d[r] > 0 and want[r] > 0])
            m = max(m // 2, 1)          # copies at once: half of what its share still wants
            for r in columns:
                free[r] -= m * d[r]
                want[r] -= m * d[r]
                rest[r] -= m * d[r]
            taken[b, chosen] += m
            counts[chosen] -= m
            if not counts[chosen]:
                active.remove(chosen)
    return taken if not active else None


def assign(hosts: np.ndarray, shape: np.ndarray, bins: np.ndarray, taken: np.ndarray
           ) -> np.ndarray:
    """A target per item: taken[b, s] items of shape s on bins[b], those already there
    first."""
    target = np.full(len(hosts), -1, dtype=np.int64)
    slot = {(int(b), s): int(taken[n, s]) for n, b in enumerate(bins.tolist())
            for s in np.flatnonzero(taken[n]).tolist()}
    for i, (h, s) in enumerate(zip(hosts.tolist(), shape.tolist(), strict=True)):
        if slot.get((h, s), 0) > 0:
            slot[(h, s)] -= 1
            target[i] = h
    waiting = np.flatnonzero(target < 0)
    order = waiting[np.argsort(shape[waiting], kind="stable")]
    queue = sorted(((s, b) for (b, s), n in slot.items() for _ in range(n)))
    target[order] = [b for _s, b in queue]
    return target


def separate(state: PackingState, grouped: np.ndarray, plain: np.ndarray) -> None:
    """Swap each grouped instance that shares a host with a member of its hard
    anti-affinity group with a plain instance of the same demand on a host free of the
    group (the same demand both ways, so no capacity changes)."""
    p = state.problem
    for item in grouped.tolist():
        others = np.concatenate([rows[rows != item] for rows in p.anti_affinity
                                 if item in rows.tolist()])
        taken = set(state.host_of[others].tolist())
        if int(state.host_of[item]) not in taken:
            continue
        same = plain[np.all(p.demand[plain] == p.demand[item], axis=1)]
        for other in same.tolist():
            there = int(state.host_of[other])
            if there not in taken:
                state.move(other, int(state.host_of[item]))
                state.move(item, there)
                break


def sound(state: PackingState, bins: np.ndarray) -> bool:
    """No kept host over capacity in any column, no hard anti-affinity group sharing one."""
    if np.any(state.free[bins] < -EPS):
        return False
    return all(len(np.unique(state.host_of[rows])) == len(rows)
               for rows in state.problem.anti_affinity)
