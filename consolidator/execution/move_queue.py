"""The order a plan's moves may start in: the safety of its waves, without waiting for whole
waves.

The planner's waves (and the checker's replay of them) assume that a destination holds an
arriving instance from the start of its wave and that a source frees it only at the end, and
that a source sends at most its per-host limit in one wave. A move therefore depends on every
move of an earlier wave that touches its source or its destination: those free the room it
arrives in, keep its source's sends within the limit, and keep anti-affinity members apart.
Once they have all succeeded it may start, whatever other moves of their waves still run.
It suffices to wait for the moves of the latest earlier wave that touches each of its two
hosts: those wait in turn for the earlier ones.

A move that does not succeed (it failed, was skipped, or never started) holds back every move
that depends on it, and theirs in turn: nothing starts on a state the waves did not foresee.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable
from collections.abc import Set as AbstractSet

from consolidator.core.plan import Move

PENDING, STARTED, SUCCEEDED, FAILED = "pending", "started", "succeeded", "failed"


class MoveQueue:
    """Which moves may start now, given which have succeeded or failed."""

    def __init__(self, moves: Iterable[Move], done: AbstractSet[str] = frozenset()) -> None:
        self.moves = sorted(moves, key=lambda m: m.wave)
        self.by_id = {m.instance_id: m for m in self.moves}
        self.state = {m.instance_id: SUCCEEDED if m.instance_id in done else PENDING
                      for m in self.moves}
        touching: dict[tuple[str, int], list[str]] = defaultdict(list)
        waves: dict[str, set[int]] = defaultdict(set)
        for m in self.moves:
            for host in {m.source, m.destination}:
                touching[host, m.wave].append(m.instance_id)
                waves[host].add(m.wave)
        ordered = {host: sorted(w) for host, w in waves.items()}
        #: instance id -> the instance ids of the moves it waits for.
        self.needs: dict[str, set[str]] = {}
        #: instance id -> the instance ids of the moves that wait for it.
        self.waiting: dict[str, list[str]] = defaultdict(list)
        for m in self.moves:
            needs: set[str] = set()
            for host in {m.source, m.destination}:
                earlier = ordered[host][:bisect_left(ordered[host], m.wave)]
                if earlier:
                    needs.update(touching[host, earlier[-1]])
            self.needs[m.instance_id] = needs
            for other in needs:
                self.waiting[other].append(m.instance_id)

    def ready(self) -> list[Move]:
        """The pending moves whose every prerequisite succeeded, in wave order."""
        return [m for m in self.moves if self.state[m.instance_id] == PENDING
                and all(self.state[n] == SUCCEEDED for n in self.needs[m.instance_id])]

    def start(self, move: Move) -> None:
        """Mark a move as taken (started, or about to be checked and started)."""
        self.state[move.instance_id] = STARTED

    def succeeded(self, move: Move) -> None:
        """Mark a move as done: the moves waiting for it may become ready."""
        self.state[move.instance_id] = SUCCEEDED

    def failed(self, move: Move) -> list[tuple[Move, Move]]:
        """Mark a move as not done; return the pending moves it holds back (transitively),
        each with the move it waited for, now failed too."""
        self.state[move.instance_id] = FAILED
        held: list[tuple[Move, Move]] = []
        todo = [move.instance_id]
        while todo:
            cause = todo.pop()
            for other in self.waiting.get(cause, ()):
                if self.state[other] == PENDING:
                    self.state[other] = FAILED
                    held.append((self.by_id[other], self.by_id[cause]))
                    todo.append(other)
        return held

    def pending(self) -> list[Move]:
        """The moves neither taken nor resolved."""
        return [m for m in self.moves if self.state[m.instance_id] == PENDING]
