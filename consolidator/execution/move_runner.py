"""Run a plan's moves from a queue: each starts as soon as the moves it depends on have
succeeded (consolidator.execution.move_queue) and a slot is free, within the overall and
per-destination limits; a slow move holds back only the moves that depend on it."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from consolidator.core.plan import Move
from consolidator.core.wording import duration
from consolidator.execution.move_queue import MoveQueue

#: Seconds between looks at the stop flag while moves run.
TICK_S = 0.2


@dataclass
class MoveCallbacks:
    """What the runner asks of the executor."""

    #: The moves that pass their pre-checks on the live state (the others are skipped there).
    precheck: Callable[[list[Move]], list[Move]]
    #: One migration: None on success, else why not (the executor's _NOT_STARTED included).
    migrate: Callable[[Move], str | None]
    #: Record a finished migration (error None: it succeeded).
    finished: Callable[[Move, str | None], None]
    #: Skip a move that was never started, with the reason.
    skip: Callable[[Move, str], None]
    #: Whether the run is stopping (start nothing new).
    stopping: Callable[[], bool]
    #: Why moves not started are skipped when the run stops.
    stopped_reason: Callable[[], str]
    report: Callable[[str], None]


def run_moves(queue: MoveQueue, calls: MoveCallbacks, *, max_parallel: int,
              max_per_destination: int, total: int, finished: int) -> None:
    """Start moves as they become ready and slots free up, until none is left."""
    running: dict[Future, Move] = {}
    into: Counter[str] = Counter()
    waiting: list[Move] = []
    announced: set[int] = set()
    parallel, per_dest = max(max_parallel, 1), max(max_per_destination, 1)
    began, first = time.monotonic(), finished
    with ThreadPoolExecutor(max_workers=parallel) as pool:
        while True:
            if calls.stopping():
                for move in waiting + queue.pending():
                    queue.failed(move)
                    calls.skip(move, calls.stopped_reason())
                waiting = []
            else:
                fresh = queue.ready()
                for move in fresh:
                    queue.start(move)
                if fresh:
                    passed = calls.precheck(fresh)
                    kept = {m.instance_id for m in passed}
                    for move in fresh:
                        if move.instance_id not in kept:
                            _hold_back(queue, calls, move)
                    waiting += passed
                for move in list(waiting):
                    if len(running) >= parallel or into[move.destination] >= per_dest:
                        continue
                    if move.wave not in announced:
                        announced.add(move.wave)
                        left = eta(time.monotonic() - began, finished - first,
                                   total - finished)
                        calls.report(f"wave {move.wave}: starting ({finished}/{total} "
                                     f"done so far{left})")
                    waiting.remove(move)
                    into[move.destination] += 1
                    running[pool.submit(calls.migrate, move)] = move
            if not running:
                if waiting or (queue.ready() and not calls.stopping()):
                    continue
                for move in queue.pending():      # nothing can ever make these ready
                    queue.failed(move)
                    calls.skip(move, "held back: the moves it waits for did not all succeed")
                return
            done, _ = wait(list(running), timeout=TICK_S, return_when=FIRST_COMPLETED)
            for future in done:
                move = running.pop(future)
                into[move.destination] -= 1
                finished += 1
                error = future.result()
                calls.finished(move, error)
                if error is None:
                    queue.succeeded(move)
                else:
                    _hold_back(queue, calls, move)


def eta(elapsed: float, done: int, left: int) -> str:
    """', about 3 min 20 s left': the rate so far over what is left ('' before the first
    migration ends, or when none is left)."""
    if done <= 0 or left <= 0 or elapsed <= 0:
        return ""
    return f", about {duration(elapsed / done * left)} left"


def _hold_back(queue: MoveQueue, calls: MoveCallbacks, move: Move) -> None:
    """A move that did not succeed: skip every pending move that waits for it."""
    for held, cause in queue.failed(move):
        calls.skip(held, f"held back: it waits for the move of {cause.instance_name}, "
                         f"which did not succeed")
