"""The vector packing heuristics of paper 002 (Stillwell, Vivien, Casanova), section 3.5.

Items (demand vectors) go into heterogeneous bins (residual capacity vectors). Three
heuristics, each under the paper's vector sorting strategies:

- First Fit (3.5.1): items in sorted order, each into the first bin (in sorted bin order)
  where it fits.
- Best Fit (3.5.1, 3.5.4): items in sorted order, each into the bin of least total remaining
  capacity where it fits (HVP: remaining capacity rather than load); it ignores bin sorting.
- Permutation Pack (3.5.2, 3.5.4): bins one by one in sorted order; into the current bin goes
  the fitting item whose dimension ranking best matches the bin's, found with the O(J^2 D) key
  of 3.5.2 (ties go to the earlier item in the item order); when no item fits, the next bin.

Vectors are compared after scaling each resource by the largest host capacity in it, so that
vCPUs and MiB are commensurable (the paper's vectors are normalised already).

For speed, items with the same demand vector and no hard group are one class: a run of
identical items is placed at once, with exactly the result the item-by-item heuristic gives
(a bin that could not take a class's item never can later, since free capacity only shrinks).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from consolidator.core.algorithms.hvp_fast import MARGIN, fast_item_fit

#: The vector-to-scalar mappings of 3.5 (LEX is the lexicographic order of the columns).
METRICS = ("MAX", "SUM", "MAXRATIO", "MAXDIFFERENCE", "LEX")
#: A sorting strategy: (metric or "NONE", descending).
Sort = tuple[str, bool]
#: 3.5: five metrics in either direction, plus NONE: 11 strategies.
ALL_SORTS: tuple[Sort, ...] = (("NONE", False),) + tuple(
    (m, d) for m in METRICS for d in (True, False))
#: 5.1: item sorts of METAHVPLIGHT: descending MAX, SUM, MAXDIFFERENCE, MAXRATIO.
LIGHT_ITEM_SORTS: tuple[Sort, ...] = (("MAX", True), ("SUM", True), ("MAXDIFFERENCE", True),
                                      ("MAXRATIO", True))
#: 5.1: bin sorts of METAHVPLIGHT: ascending LEX, MAX, SUM; descending MAX, MAXDIFFERENCE,
#: MAXRATIO; and NONE.
LIGHT_BIN_SORTS: tuple[Sort, ...] = (("LEX", False), ("MAX", False), ("SUM", False),
                                     ("MAX", True), ("MAXDIFFERENCE", True),
                                     ("MAXRATIO", True), ("NONE", False))


@dataclass(frozen=True)
class Strategy:
    """One HVP heuristic: 'ff', 'bf' or 'pp', an item sort and (not for bf) a bin sort."""

    algo: str
    items: Sort
    bins: Sort = ("NONE", False)

    @property
    def name(self) -> str:
        """E.g. 'pp/MAX-desc/LEX-asc' or 'bf/SUM-desc'."""
        def text(s: Sort) -> str:
            return s[0] if s[0] == "NONE" else f"{s[0]}-{'desc' if s[1] else 'asc'}"
        return f"{self.algo}/{text(self.items)}" + (
            "" if self.algo == "bf" else f"/{text(self.bins)}")


def strategies(light: bool) -> list[Strategy]:
    """METAHVP's 253 heuristics (3.5.5), or METAHVPLIGHT's 60 (5.1); cheapest first."""
    items = LIGHT_ITEM_SORTS if light else ALL_SORTS
    bins = LIGHT_BIN_SORTS if light else ALL_SORTS
    return ([Strategy("bf", i) for i in items]
            + [Strategy("ff", i, b) for i in items for b in bins]
            + [Strategy("pp", i, b) for i in items for b in bins])


def scalar(vectors: np.ndarray, metric: str) -> np.ndarray:
    """The 3.5 mapping of each (scaled) vector to a scalar."""
    top: np.ndarray = vectors.max(axis=1)
    low: np.ndarray = vectors.min(axis=1)
    if metric == "MAX":
        return top
    if metric == "SUM":
        total: np.ndarray = vectors.sum(axis=1)
        return total
    if metric == "MAXRATIO":
        ratio: np.ndarray = top / np.maximum(low, 1e-12)
        return ratio
    if metric == "MAXDIFFERENCE":
        spread: np.ndarray = top - low
        return spread
    raise ValueError(f"unknown metric {metric}")


def sort_order(vectors: np.ndarray, how: Sort) -> np.ndarray:
    """Indices of the vectors in the strategy's order; ties keep equal vectors together."""
    metric, descending = how
    index = np.arange(len(vectors))
    if metric == "NONE" or not len(vectors):
        return index
    sign = -1.0 if descending else 1.0
    columns = [sign * vectors[:, d] for d in range(vectors.shape[1] - 1, -1, -1)]
    if metric == "LEX":
        return np.lexsort((index, *columns))
    return np.lexsort((index, *columns, sign * scalar(vectors, metric)))


def dimension_order(vectors: np.ndarray) -> np.ndarray:
    """(N, D) each vector's dimensions from largest to smallest (ties: lower index first)."""
    return np.argsort(-vectors, axis=-1, kind="stable")


def permutation_keys(bin_vector: np.ndarray, item_orders: np.ndarray, window: int
                     ) -> np.ndarray:
    """3.5.2's key: item ordering mapped into the bin's ordering, O(JD); lexicographically
    smallest is the best match, (0, 1, ..., D-1) a perfect one."""
    position = np.empty(len(bin_vector), dtype=np.int64)
    position[dimension_order(bin_vector)] = np.arange(len(bin_vector))
    result: np.ndarray = position[item_orders[:, :window]]
    return result


#: From this many runs of identical items on, item_fit works on Python floats (hvp_fast):
#: below it, NumPy over all bins per run is faster.
FAST_RUNS = 64


@dataclass
class VPInstance:
    """Bins' residual capacity and items' demand, raw and scaled; item classes; groups."""

    free: np.ndarray                # (B, D) raw
    demand: np.ndarray              # (J, D) raw
    scale: np.ndarray               # (D,)
    groups: list[tuple[int, ...]] = field(default_factory=list)   # per item: hard groups
    blocked: dict[int, set[int]] = field(default_factory=dict)    # group -> bins it occupies
    window: int = 0
    orders: dict[Sort, np.ndarray] = field(default_factory=dict)   # item orders, cached
    bin_orders: dict[Sort, np.ndarray] = field(default_factory=dict)   # bin orders, cached

    def __post_init__(self) -> None:
        """Derive classes: identical demand and no hard group."""
        j = len(self.demand)
        if not self.groups:
            self.groups = [()] * j
        self.window = self.window or self.demand.shape[1]
        self.scaled = self.demand / self.scale
        self.free_scaled = self.free / self.scale
        grouped = np.array([bool(g) for g in self.groups], dtype=bool)
        inverse = np.zeros(j, dtype=np.int64)
        if j:                               # rows numbered by distinct value, via one lexsort
            order = np.lexsort(self.demand.T[::-1])
            ordered = self.demand[order]
            inverse[order] = np.concatenate(
                [[0], np.cumsum(np.any(ordered[1:] != ordered[:-1], axis=1))])
        n_plain = int(inverse.max()) + 1 if j else 0
        singles = np.flatnonzero(grouped)
        inverse[singles] = n_plain + np.arange(len(singles))
        self.item_class = inverse
        n = n_plain + len(singles)
        first = np.full(n, -1, dtype=np.int64)
        first[inverse[::-1]] = np.arange(j)[::-1]
        self.class_demand = self.demand[first] if n else np.zeros((0, self.demand.shape[1]))
        self.class_group = [self.groups[int(i)] for i in first]
        self.class_orders = dimension_order(self.class_demand / self.scale)


def fit_counts(free: np.ndarray, demand: np.ndarray) -> np.ndarray:
    """How many copies of the demand vector fit in each free vector (a large number if all 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        room = np.where(demand > 0, (free + MARGIN) / np.where(demand > 0, demand, 1.0),
                        np.where(free >= -MARGIN, np.inf, 0.0))
    result: np.ndarray = np.floor(np.clip(room.min(axis=-1), 0.0, 1e9)).astype(np.int64)
    return result


class _Run:
    """Mutable state of one heuristic run over a VPInstance."""

    def __init__(self, inst: VPInstance) -> None:
        self.inst = inst
        self.free = inst.free.copy()
        self.rsum = inst.free_scaled.sum(axis=1)
        self.blocked = {g: set(b) for g, b in inst.blocked.items()}
        self.target = np.full(len(inst.demand), -1, dtype=np.int64)

    def allowed(self, cls: int, counts: np.ndarray, bins: np.ndarray | None = None) -> None:
        """Zero the counts of bins a grouped class may not use (in place); 1 at most else."""
        groups = self.inst.class_group[cls]
        if not groups:
            return
        np.minimum(counts, 1, out=counts)
        for g in groups:
            taken = self.blocked.get(g)
            if taken:
                if bins is None:
                    counts[list(taken)] = 0
                else:
                    counts[np.isin(bins, list(taken))] = 0

    def put(self, items: np.ndarray, bins: np.ndarray, takes: np.ndarray, cls: int) -> None:
        """Assign the items, in order, to the bins, takes[k] of them to bins[k]."""
        self.target[items] = np.repeat(bins, takes)
        d = self.inst.class_demand[cls]
        self.free[bins] -= takes[:, None] * d
        self.rsum[bins] -= takes * float((d / self.inst.scale).sum())
        for g in self.inst.class_group[cls]:
            self.blocked.setdefault(g, set()).update(bins.tolist())


def _runs(classes: np.ndarray) -> list[tuple[int, int]]:
    """(start, stop) of each run of equal consecutive values."""
    if not len(classes):
        return []
    cuts = np.flatnonzero(np.diff(classes)) + 1
    starts = np.concatenate([[0], cuts])
    stops = np.concatenate([cuts, [len(classes)]])
    return list(zip(starts.tolist(), stops.tolist(), strict=True))


def item_fit(inst: VPInstance, item_order: np.ndarray, bin_order: np.ndarray | None
             ) -> np.ndarray | None:
    """First Fit (bin_order given) or HVP Best Fit (None), 3.5.1; bin per item or None."""
    ordered = inst.item_class[item_order]
    short_runs = np.count_nonzero(ordered[1:] != ordered[:-1]) >= FAST_RUNS
    if short_runs and not inst.blocked and not any(inst.class_group):   # same result, faster
        return fast_item_fit(inst.class_demand, inst.item_class, inst.scale, inst.free,
                             inst.free_scaled, item_order, bin_order)
    return numpy_item_fit(inst, item_order, bin_order)


def numpy_item_fit(inst: VPInstance, item_order: np.ndarray, bin_order: np.ndarray | None
                   ) -> np.ndarray | None:
    """item_fit with NumPy over all bins per run of identical items (hard groups too)."""
    run = _Run(inst)
    ordered_classes = inst.item_class[item_order]
    pointer: dict[int, int] = {}
    for start, stop in _runs(ordered_classes):
        cls = int(ordered_classes[start])
        need = stop - start
        d = inst.class_demand[cls]
        if bin_order is not None:           # First Fit: scan from the class's pointer
            at = pointer.get(cls, 0)
            seq, counts = bin_order[at:], np.zeros(0, dtype=np.int64)
            for chunk in (256, len(seq)):
                seq = bin_order[at:at + chunk]
                counts = np.minimum(fit_counts(run.free[seq], d), need)
                run.allowed(cls, counts, seq)
                if counts.sum() >= need:
                    break
        else:                               # Best Fit: least total remaining capacity first
            counts = np.minimum(fit_counts(run.free, d), need)
            run.allowed(cls, counts)
            fits = np.flatnonzero(counts > 0)
            if need == 1 and len(fits):
                seq = fits[[int(np.argmin(run.rsum[fits]))]]
            else:
                seq = fits[np.lexsort((fits, run.rsum[fits]))]
            counts = counts[seq]
        total = np.cumsum(counts)
        if not len(total) or total[-1] < need:
            return None
        last = int(np.searchsorted(total, need))
        takes = counts[:last + 1].copy()
        takes[-1] -= int(total[last]) - need
        run.put(item_order[start:stop], seq[:last + 1], takes, cls)
        if bin_order is not None:
            pointer[cls] = pointer.get(cls, 0) + last
    return run.target


def permutation_pack(inst: VPInstance, item_order: np.ndarray, bin_order: np.ndarray
                     ) -> np.ndarray | None:
    """Permutation Pack, 3.5.2 with the HVP change of 3.5.4; bin per item or None.

    The per-bin loop works on Python floats: with a handful of classes and D columns that is
    several times faster than NumPy calls on tiny arrays.
    """
    dims = range(inst.demand.shape[1])
    rank = np.empty(len(item_order), dtype=np.int64)
    rank[item_order] = np.arange(len(item_order))
    by_class = np.lexsort((rank, inst.item_class))          # items by class, then rank
    bounds = np.searchsorted(inst.item_class[by_class], np.arange(len(inst.class_demand) + 1))
    ranks: list[int] = rank[by_class].tolist()
    ptr: list[int] = bounds[:-1].tolist()
    left: list[int] = np.diff(bounds).tolist()
    remaining = sum(left)
    scale: list[float] = inst.scale.tolist()
    demand: list[list[float]] = inst.class_demand.tolist()
    orders = [tuple(o[:inst.window]) for o in inst.class_orders.tolist()]
    groups = inst.class_group
    blocked = {g: set(b) for g, b in inst.blocked.items()}
    need: list[float] = inst.demand.sum(axis=0).tolist()
    suffix: list[list[float]] = np.cumsum(inst.free[bin_order][::-1], axis=0)[::-1].tolist()
    free_rows: list[list[float]] = inst.free.tolist()
    active = [c for c in range(len(left)) if left[c]]
    placed: list[tuple[int, int, int]] = []
    for pos, b in enumerate(bin_order.tolist()):
        free = free_rows[b]
        active = [c for c in active if left[c]]
        cands = [c for c in active if _allowed(groups[c], blocked, b)]
        while cands:
            vals = [free[i] / scale[i] for i in dims]
            border = sorted(dims, key=lambda i: (-vals[i], i))
            position = [0] * len(vals)
            for p, i in enumerate(border):
                position[i] = p
            chosen: tuple[tuple[int, ...], int, int] | None = None
            rival = -1
            dead = []
            for key, first, c in sorted((tuple(position[i] for i in orders[c]), ranks[ptr[c]], c)
                                        for c in cands):
                if chosen is not None and key != chosen[0]:
                    break
                n = _fit(free, demand[c], left[c], dims)
                if not n:
                    dead.append(c)              # a class that stops fitting never fits again
                elif chosen is None:
                    chosen = (key, c, n)
                else:
                    rival = first               # an equal-key class has a later-ranked turn
                    break
            if dead:
                cands = [c for c in cands if c not in dead]
            if chosen is None:
                break
            _key, cls, m = chosen
            if rival >= 0:
                m = bisect.bisect_left(ranks, rival, ptr[cls], ptr[cls] + m) - ptr[cls]
            m = _same_order(vals, border, [d / s for d, s in zip(demand[cls], scale,
                                                                    strict=True)], m)
            d = demand[cls]
            placed.append((ptr[cls], ptr[cls] + m, b))
            ptr[cls] += m
            left[cls] -= m
            remaining -= m
            for i in dims:
                free[i] -= m * d[i]
                need[i] -= m * d[i]
            if groups[cls]:
                for g in groups[cls]:
                    blocked.setdefault(g, set()).add(b)
                cands = [c for c in cands if _allowed(groups[c], blocked, b)]
            if not left[cls] and cls in cands:
                cands.remove(cls)
        if not remaining:
            break
        if pos + 1 < len(suffix) and any(need[i] > suffix[pos + 1][i] + MARGIN for i in dims):
            return None                           # what is left cannot fit in the bins left
    if remaining:
        return None
    target = np.full(len(item_order), -1, dtype=np.int64)
    for start, stop, b in placed:
        target[by_class[start:stop]] = b
    return target


def _allowed(groups: tuple[int, ...], blocked: dict[int, set[int]], b: int) -> bool:
    """Whether no hard group of the class already occupies bin b."""
    return not groups or all(b not in blocked.get(g, ()) for g in groups)


def _fit(free: list[float], demand: list[float], most: int, dims: range) -> int:
    """How many copies of demand fit in free, at most `most`."""
    n = most
    for i in dims:
        if demand[i] > 0:
            n = min(n, int((free[i] + MARGIN) // demand[i]))
        elif free[i] < -MARGIN:
            return 0
    return max(n, 0)


def _same_order(vals: list[float], border: list[int], scaled: list[float], m: int) -> int:
    """How many copies go in before the bin's dimension ranking changes (>= 1 if m >= 1).

    Adjacent dimensions a before b stay so while vals[a] - t*scaled[a] beats vals[b] -
    t*scaled[b] (ties go to the lower index, as in dimension_order).
    """
    for a, b in zip(border, border[1:], strict=False):
        gap, closing = vals[a] - vals[b], scaled[a] - scaled[b]
        if closing <= 0 or m <= 1:
            continue
        cross = gap / closing                   # the step t where the two meet
        last = math.floor(cross) if a < b else math.ceil(cross) - 1
        m = min(m, max(last, 0) + 1)
    return m


def _orders(inst: VPInstance, strategy: Strategy) -> tuple[np.ndarray, np.ndarray | None]:
    """The strategy's item order and bin order (None for bf, which ignores it), cached."""
    item_order = inst.orders.get(strategy.items)
    if item_order is None:
        item_order = inst.orders[strategy.items] = sort_order(inst.scaled, strategy.items)
    if strategy.algo == "bf":
        return item_order, None
    bin_order = inst.bin_orders.get(strategy.bins)
    if bin_order is None:
        bin_order = inst.bin_orders[strategy.bins] = sort_order(inst.free_scaled, strategy.bins)
    return item_order, bin_order


def run_strategy(inst: VPInstance, strategy: Strategy) -> np.ndarray | None:
    """One heuristic: the bin of every item, or None if some item finds no bin."""
    item_order, bin_order = _orders(inst, strategy)
    if bin_order is None:
        return item_fit(inst, item_order, None)
    if strategy.algo == "ff":
        return item_fit(inst, item_order, bin_order)
    return permutation_pack(inst, item_order, bin_order)


def meta_hvp(inst: VPInstance, tried: Sequence[Strategy]
             ) -> tuple[np.ndarray, Strategy] | None:
    """METAHVP (3.5.5) / METAHVPLIGHT (5.1): the first heuristic that packs every item."""
    if not len(inst.demand):
        return np.zeros(0, dtype=np.int64), tried[0]
    if np.any(inst.demand.sum(axis=0) > inst.free.sum(axis=0) + MARGIN):
        return None                         # not even the volume fits: every heuristic fails
    failed: set[tuple[str, bytes, bytes]] = set()
    for strategy in tried:
        # Sorts that order this instance's items and bins alike make the same run: a run
        # that failed once fails again (about 1 in 5 of METAHVP's 253 on mixed clusters).
        item_order, bin_order = _orders(inst, strategy)
        key = (strategy.algo, item_order.tobytes(), b"" if bin_order is None
               else bin_order.tobytes())
        if key in failed:
            continue
        target = run_strategy(inst, strategy)
        if target is not None:
            return target, strategy
        failed.add(key)
    return None
