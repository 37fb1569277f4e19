"""First Fit and HVP Best Fit of hvp_pack (3.5.1) on Python floats, for items without groups.

The result is the one hvp_pack's NumPy loop gives (the same arithmetic on the same floats and
the same tie-breaking), several times faster where runs of identical items are short: the NONE
item order keeps items in host order, so most of its runs are one item long and each NumPy
call on all the bins cost more than the item. First Fit scans the bins from a per-class
pointer (a bin a class skipped never takes it later, since free capacity only shrinks); Best
Fit keeps, per class, a heap of (total remaining capacity, bin) whose stale entries (the bin's
capacity changed since) and bins the class no longer fits are dropped as they come up.
"""

from __future__ import annotations

import heapq
import math

import numpy as np

from consolidator.core.algorithms.state import EPS

#: Safety margin inside EPS so that sequential re-checks in PackingState agree.
MARGIN = EPS / 2
#: hvp_pack.fit_counts' cap on the copies of an all-zero demand that fit.
MOST_COPIES = 1e9


def copies(free: list[float], demand: list[float]) -> int:
    """How many copies of demand fit in free: hvp_pack.fit_counts for one bin."""
    room = math.inf
    for f, d in zip(free, demand, strict=True):
        if d > 0:
            r = (f + MARGIN) / d
            if r < room:
                room = r
        elif f < -MARGIN:
            return 0
    if room <= 0:
        return 0
    return int(math.floor(min(room, MOST_COPIES)))


class _Bins:
    """The bins' free vectors and total remaining scaled capacity, as Python floats."""

    def __init__(self, free: np.ndarray, free_scaled: np.ndarray, class_demand: np.ndarray,
                 scale: np.ndarray) -> None:
        self.rows: list[list[float]] = free.tolist()
        self.rsum: list[float] = free_scaled.sum(axis=1).tolist()
        self.demand: list[list[float]] = class_demand.tolist()
        self.scaled_sum = [float((row / scale).sum()) for row in class_demand]

    def put(self, used: list[tuple[int, int]], cls: int, assigned: list[int]) -> None:
        """takes copies of the class into each (bin, takes), as _Run.put does."""
        d, s = self.demand[cls], self.scaled_sum[cls]
        for b, t in used:
            row = self.rows[b]
            for i, v in enumerate(d):
                row[i] -= t * v
            self.rsum[b] -= t * s
            assigned.extend([b] * t)


def fast_item_fit(class_demand: np.ndarray, item_class: np.ndarray, scale: np.ndarray,
                  free: np.ndarray, free_scaled: np.ndarray, item_order: np.ndarray,
                  bin_order: np.ndarray | None) -> np.ndarray | None:
    """First Fit (bin_order given) or HVP Best Fit (None); bin per item or None."""
    bins = _Bins(free, free_scaled, class_demand, scale)
    ordered = item_class[item_order]
    cuts = (np.flatnonzero(np.diff(ordered)) + 1).tolist()
    starts, stops = [0, *cuts], [*cuts, len(ordered)]
    classes = ordered[starts].tolist() if len(ordered) else []
    assigned: list[int] = []
    placer = _FirstFit(bins, bin_order.tolist()) if bin_order is not None else _BestFit(bins)
    for start, stop, cls in zip(starts, stops, classes, strict=False):
        used = placer.place(cls, stop - start)
        if used is None:
            return None
        bins.put(used, cls, assigned)
        placer.changed(used)
    target = np.full(len(item_class), -1, dtype=np.int64)
    target[item_order] = assigned
    return target


class _FirstFit:
    """First Fit: a run's items go to the bins in bin order, from the class's pointer."""

    def __init__(self, bins: _Bins, order: list[int]) -> None:
        self.bins, self.order = bins, order
        self.pointer = [0] * len(bins.demand)

    def place(self, cls: int, need: int) -> list[tuple[int, int]] | None:
        """(bin, copies) for a run of `need` items of the class, or None if they do not fit."""
        d, rows, order = self.bins.demand[cls], self.bins.rows, self.order
        pos, used = self.pointer[cls], []
        while pos < len(order):
            b = order[pos]
            n = copies(rows[b], d)
            if n >= need:
                used.append((b, need))
                self.pointer[cls] = pos             # the last bin used may take more
                return used
            if n:
                used.append((b, n))
                need -= n
            pos += 1
        return None

    def changed(self, used: list[tuple[int, int]]) -> None:
        """Nothing to keep up to date."""


class _BestFit:
    """HVP Best Fit: a run's items go to the fitting bins by least total remaining capacity
    (then lowest index), as many copies in each as fit."""

    def __init__(self, bins: _Bins) -> None:
        self.bins = bins
        self.heaps: dict[int, list[tuple[float, int]]] = {}

    def heap(self, cls: int) -> list[tuple[float, int]]:
        """The class's heap of (remaining capacity, bin), made on first use."""
        heap = self.heaps.get(cls)
        if heap is None:
            d, rows = self.bins.demand[cls], self.bins.rows
            heap = [(r, b) for b, r in enumerate(self.bins.rsum) if copies(rows[b], d)]
            heapq.heapify(heap)
            self.heaps[cls] = heap
        return heap

    def place(self, cls: int, need: int) -> list[tuple[int, int]] | None:
        """(bin, copies) for a run of `need` items of the class, or None if they do not fit."""
        heap, d, bins = self.heap(cls), self.bins.demand[cls], self.bins
        used: list[tuple[int, int]] = []
        seen: set[int] = set()
        while need:
            if not heap:
                return None
            r, b = heapq.heappop(heap)
            if r != bins.rsum[b] or b in seen:
                continue                        # stale, or a duplicate of an entry used
            n = copies(bins.rows[b], d)
            if not n:
                continue                        # the class never fits this bin again
            seen.add(b)
            t = min(n, need)
            used.append((b, t))
            need -= t
        return used

    def changed(self, used: list[tuple[int, int]]) -> None:
        """The bins used have a new remaining capacity: a new entry in every heap."""
        for b, _t in used:
            entry = (self.bins.rsum[b], b)
            for heap in self.heaps.values():
                heapq.heappush(heap, entry)
