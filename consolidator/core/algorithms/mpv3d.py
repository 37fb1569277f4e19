"""Martello-Pisinger-Vigo style heuristics H1 and H2 for 3D bin packing (pure, no cloud).

Boxes have integer sizes (w, h, d) on a bin grid W x H x D and a fixed orientation. Besides the
geometry, every bin carries a capacity vector that the boxes' demands must fit, and boxes that
share a conflict group (hard anti-affinity) never share a bin.

- **H2** fills one bin at a time so as to maximise the volume packed in it. MPV fill a bin with
  a truncated branch and bound over corner points; here the bin is filled greedily under a few
  box orders (volume, depth, footprint first) and the fill with the largest volume is kept.
  Each box goes to its deepest-bottom-left free position, which is a corner point.
- **H1** sorts the boxes by nonincreasing depth and packs them, by 2D first fit, into layers
  W x H x d whose depth d is the depth of the layer's first box. The layers are then packed into
  bins by a 1D first-fit-decreasing bin packing on their depth. A layer of depth d may hold
  d/D of the bin's capacity, so layers whose depths fit in D also fit the capacity.

Boxes with the same size and demand and no group are interchangeable; they are queued in
batches, so a bin costs O(batches + boxes placed) box trials instead of a scan of every box.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: Tolerance for float capacity comparisons.
EPS = 1e-6


class Grid:
    """The occupancy of a W x H x D bin, with a deepest-bottom-left placement query."""

    def __init__(self, shape: tuple[int, int, int]) -> None:
        self.shape = shape
        self.occupied = np.zeros(shape, dtype=bool)
        self.filled = 0
        self._sums: np.ndarray | None = None

    def copy(self) -> Grid:
        """An independent copy."""
        other = Grid(self.shape)
        other.occupied = self.occupied.copy()
        other.filled = self.filled
        other._sums = self._sums
        return other

    def position(self, box: Sequence[int]) -> tuple[int, int, int] | None:
        """The free position for the box with the smallest (z, y, x), or None."""
        w, h, d = (int(v) for v in box)
        big_w, big_h, big_d = self.shape
        if w > big_w or h > big_h or d > big_d or w * h * d > self.occupied.size - self.filled:
            return None
        if self.filled == 0:
            return (0, 0, 0)
        s = self._prefix()
        x1, x0 = slice(w, big_w + 1), slice(0, big_w - w + 1)
        y1, y0 = slice(h, big_h + 1), slice(0, big_h - h + 1)
        z1, z0 = slice(d, big_d + 1), slice(0, big_d - d + 1)
        block = (s[x1, y1, z1] - s[x0, y1, z1] - s[x1, y0, z1] - s[x1, y1, z0]
                 + s[x0, y0, z1] + s[x0, y1, z0] + s[x1, y0, z0] - s[x0, y0, z0])
        free = (block == 0).transpose(2, 1, 0)
        flat = int(np.argmax(free))
        if not free.flat[flat]:
            return None
        z, y, x = np.unravel_index(flat, free.shape)
        return int(x), int(y), int(z)

    def occupy(self, box: Sequence[int], at: tuple[int, int, int]) -> None:
        """Mark the box's cells at a position as occupied."""
        w, h, d = (int(v) for v in box)
        x, y, z = at
        self.occupied[x:x + w, y:y + h, z:z + d] = True
        self.filled += w * h * d
        self._sums = None

    def _prefix(self) -> np.ndarray:
        if self._sums is None:
            sums = np.zeros(tuple(n + 1 for n in self.shape), dtype=np.int32)
            sums[1:, 1:, 1:] = self.occupied.cumsum(0).cumsum(1).cumsum(2)
            self._sums = sums
        return self._sums


@dataclass
class Boxes:
    """The items to pack, indexed by item id: box sizes, demands, conflict groups, order."""

    dims: np.ndarray                      # (n, 3) int: w, h, d in grid units
    demand: np.ndarray                    # (n, R) float
    groups: Sequence[frozenset[int]]      # per item: hard anti-affinity group ids
    rank: np.ndarray                      # (n,) int: order among interchangeable boxes
    size: np.ndarray                      # (n,) float: real size, larger first on ties


class Bin:
    """One bin: grid, remaining capacity, groups present and the items packed."""

    def __init__(self, shape: tuple[int, int, int], capacity: np.ndarray) -> None:
        self.grid = Grid(shape)
        self.free = np.asarray(capacity, dtype=np.float64).copy()
        self.groups: set[int] = set()
        self.items: list[int] = []
        self.volume = 0

    def copy(self) -> Bin:
        """An independent copy."""
        other = Bin.__new__(Bin)
        other.grid = self.grid.copy()
        other.free = self.free.copy()
        other.groups = set(self.groups)
        other.items = list(self.items)
        other.volume = self.volume
        return other

    def try_add(self, item: int, boxes: Boxes) -> bool:
        """Pack the item if its capacity, groups and geometry allow; report whether it did."""
        demand = boxes.demand[item]
        if not bool(np.all(self.free >= demand - EPS)):
            return False
        groups = boxes.groups[item]
        if groups and not self.groups.isdisjoint(groups):
            return False
        box = boxes.dims[item]
        at = self.grid.position(box)
        if at is None:
            return False
        self.grid.occupy(box, at)
        self._take(item, demand, groups, int(box[0] * box[1] * box[2]))
        return True

    def force(self, item: int, boxes: Boxes) -> None:
        """Pack an item that is already there (pinned): geometry only if it has room."""
        box = boxes.dims[item]
        at = self.grid.position(box)
        if at is not None:
            self.grid.occupy(box, at)
        self._take(item, boxes.demand[item], boxes.groups[item], int(np.prod(box)))

    def _take(self, item: int, demand: np.ndarray, groups: frozenset[int], volume: int) -> None:
        self.free -= demand
        self.groups |= groups
        self.items.append(item)
        self.volume += volume


class Pool:
    """The items left to pack, in batches of interchangeable boxes."""

    def __init__(self, boxes: Boxes, items: Sequence[int]) -> None:
        self.boxes = boxes
        order = np.asarray(items, dtype=np.int64)
        self.batches: list[list[int]] = []
        self.keys: list[tuple[int, int, int, float]] = []
        if order.size:
            order = order[np.lexsort((order, boxes.rank[order]))]
            typed = np.array([not boxes.groups[i] for i in order.tolist()], dtype=np.bool_)
            signature = np.hstack([boxes.dims[order], boxes.demand[order]])
            _, kind = np.unique(signature, axis=0, return_inverse=True)
            kind = np.where(typed, kind.ravel(), -1)
            by_kind: dict[int, list[int]] = {}
            for item, k in zip(order.tolist(), kind.tolist(), strict=True):
                if k < 0:
                    self._add_batch([item])
                else:
                    by_kind.setdefault(k, []).append(item)
            for batch in by_kind.values():
                self._add_batch(batch)
        self.head = [0] * len(self.batches)

    def _add_batch(self, batch: list[int]) -> None:
        first = batch[0]
        w, h, d = (int(v) for v in self.boxes.dims[first])
        self.batches.append(batch)
        self.keys.append((w, h, d, float(self.boxes.size[first])))

    def order(self, kind: str) -> list[int]:
        """The non-empty batches in one of the box orders of ORDERS."""
        live = [b for b in range(len(self.batches)) if self.head[b] < len(self.batches[b])]
        return sorted(live, key=lambda b: ORDERS[kind](self.keys[b]))

    def remaining(self) -> list[int]:
        """Every item not yet packed."""
        return [i for b, batch in enumerate(self.batches) for i in batch[self.head[b]:]]

    def __bool__(self) -> bool:
        return any(h < len(b) for h, b in zip(self.head, self.batches, strict=True))


#: Box orders for filling a bin; each key sorts ascending.
ORDERS = {
    "volume": lambda k: (-k[0] * k[1] * k[2], -k[2], -k[3]),
    "depth": lambda k: (-k[2], -k[0] * k[1], -k[3]),
    "footprint": lambda k: (-k[0] * k[1], -k[2], -k[3]),
}


def greedy_fill(bin_: Bin, pool: Pool, kind: str) -> tuple[Bin, list[int]]:
    """A copy of the bin filled from the pool in one box order, and the count per batch."""
    trial = bin_.copy()
    taken = [0] * len(pool.batches)
    for b in pool.order(kind):
        batch, start = pool.batches[b], pool.head[b]
        k = start
        while k < len(batch) and trial.try_add(batch[k], pool.boxes):
            k += 1          # the next box of a batch is the same box: stop at the first miss
        taken[b] = k - start
    return trial, taken


def fill_bin(bin_: Bin, pool: Pool) -> Bin:
    """H2's step: fill one bin from the pool, keeping the order that packs the most volume."""
    best: tuple[Bin, list[int]] | None = None
    for kind in ORDERS:
        trial, taken = greedy_fill(bin_, pool, kind)
        if best is None or trial.volume > best[0].volume:
            best = (trial, taken)
    assert best is not None
    for b, count in enumerate(best[1]):
        pool.head[b] += count
    return best[0]


def h2(pool: Pool, shape: tuple[int, int, int], capacity: np.ndarray,
       max_bins: int) -> list[Bin]:
    """H2: open and fill bins one at a time, at most max_bins, while any box still fits."""
    bins: list[Bin] = []
    while pool and len(bins) < max_bins:
        filled = fill_bin(Bin(shape, capacity), pool)
        if not filled.items:
            break
        bins.append(filled)
    return bins


def h1(pool: Pool, shape: tuple[int, int, int], capacity: np.ndarray,
       max_bins: int) -> list[Bin]:
    """H1: layers by 2D first fit on nonincreasing depth, then 1D FFD of layers on depth.

    At most max_bins bins are kept (the fullest); the boxes of the others go back to the pool.
    """
    big_w, big_h, big_d = shape
    capacity = np.asarray(capacity, dtype=np.float64)
    layers: list[tuple[int, Bin]] = []
    flat = Boxes(dims=pool.boxes.dims.copy(), demand=pool.boxes.demand, groups=pool.boxes.groups,
                 rank=pool.boxes.rank, size=pool.boxes.size)
    flat.dims[:, 2] = 1
    for b in pool.order("depth"):
        batch = pool.batches[b]
        depth = pool.keys[b][2]
        k = pool.head[b]
        for _, layer in layers:        # first fit: every layer is at least as deep as this box
            while k < len(batch) and layer.try_add(batch[k], flat):
                k += 1
            if k == len(batch):
                break
        while k < len(batch):
            # A new layer is as deep as its first box, or deeper if its share must be larger.
            for deeper in range(depth, big_d + 1):
                layer = Bin((big_w, big_h, 1), capacity * deeper / big_d)
                if layer.try_add(batch[k], flat):
                    break
            else:
                break                  # this box fits no layer: it stays in the pool
            k += 1
            while k < len(batch) and layer.try_add(batch[k], flat):
                k += 1
            layers.append((deeper, layer))
        pool.head[b] = k
    stacks: list[tuple[list[int], Bin]] = []      # (depth left, bin) per bin
    for depth, layer in sorted(layers, key=lambda dl: -dl[0]):
        need = capacity * depth / big_d - layer.free
        for room, stack in stacks:
            if room[0] >= depth and stack.groups.isdisjoint(layer.groups) \
                    and bool(np.all(stack.free >= need - EPS)):
                break
        else:
            room, stack = [big_d], Bin(shape, capacity)
            stacks.append((room, stack))
        room[0] -= depth
        stack.free -= need
        stack.groups |= layer.groups
        stack.items.extend(layer.items)
        stack.volume += int(np.prod(pool.boxes.dims[layer.items], axis=1).sum())
    stacks.sort(key=lambda rs: -rs[1].volume)
    for _, dropped in stacks[max_bins:]:
        _return_to_pool(pool, dropped.items)
    return [stack for _, stack in stacks[:max_bins]]


def _return_to_pool(pool: Pool, items: Sequence[int]) -> None:
    """Put packed items back into the pool (the boxes of bins H1 drops)."""
    back = set(items)
    for b, batch in enumerate(pool.batches):
        head = pool.head[b]
        placed = batch[:head]
        keep = [i for i in placed if i not in back]
        if len(keep) < len(placed):
            pool.batches[b] = keep + [i for i in placed if i in back] + batch[head:]
            pool.head[b] = len(keep)
