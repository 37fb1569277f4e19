"""Live migration progress for the terminal: one line per running migration, a bar and
Nova's memory counters where it gives them, redrawn on a terminal and plain elsewhere."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TextIO

from consolidator.execution.progress import RUNNING, STARTED, MigrationProgress

GIB = 1024 ** 3
BAR = 20


def progress_line(event: MigrationProgress) -> str:
    """e.g. '  vm-1 c3 -> c1 [#########-----------] 45% 1.8/4.0 GiB 3.2 s'."""
    head = f"  {event.instance} {event.source} -> {event.destination}"
    fraction = event.fraction
    if fraction is None:
        return f"{head} copying ({event.elapsed:.1f} s)"
    filled = int(round(fraction * BAR))
    done = (event.memory_processed_bytes or 0) / GIB
    total = (event.memory_total_bytes or 0) / GIB
    return (f"{head} [{'#' * filled}{'-' * (BAR - filled)}] {fraction * 100:3.0f}% "
            f"{done:.1f}/{total:.1f} GiB {event.elapsed:.1f} s")


def milestone(event: MigrationProgress, every: float = 0.25, seconds: float = 30.0) -> int:
    """Which step of progress an event has reached, for plain (non-terminal) output: a line
    is printed each time it changes (each quarter of the memory, or every 30 s without)."""
    fraction = event.fraction
    if fraction is None:
        return int(event.elapsed // seconds)
    return int(fraction // every)


#: Move up `n` lines to the start and clear to the end of the screen.
UP_AND_CLEAR = "\x1b[{n}F\x1b[J"


class ProgressDisplay:
    """What the executor reports, with the running migrations' progress below it."""

    def __init__(self, stream: TextIO, *, tty: bool) -> None:
        self.stream, self.tty = stream, tty
        self.running: dict[str, MigrationProgress] = {}
        self.shown: dict[str, int] = {}
        self.drawn = 0
        self.lock = threading.RLock()   # a signal handler in the main thread reports too

    def event(self, event: MigrationProgress) -> None:
        """A migration started, advanced or ended."""
        with self.lock:
            if event.phase in (STARTED, RUNNING):
                self.running[event.instance] = event
            else:
                self.running.pop(event.instance, None)
                self.shown.pop(event.instance, None)
            if self.tty:
                self._redraw()
            elif event.phase == RUNNING:
                step = milestone(event)
                if step > self.shown.get(event.instance, 0):
                    self.shown[event.instance] = step
                    self.stream.write(progress_line(event) + "\n")
                    self.stream.flush()

    def wrap(self, report: Callable[[str], None]) -> Callable[[str], None]:
        """The reporter to give the executor: its lines go above the live ones."""
        def line(text: str) -> None:
            with self.lock:
                self._clear()
                report(text)
                self._draw()
        return line

    def close(self) -> None:
        """Remove the live lines."""
        with self.lock:
            self._clear()
            self.running.clear()

    def _clear(self) -> None:
        if self.tty and self.drawn:
            self.stream.write(UP_AND_CLEAR.format(n=self.drawn))
            self.stream.flush()
            self.drawn = 0

    def _draw(self) -> None:
        if not self.tty or not self.running:
            return
        self.stream.write("".join(progress_line(e) + "\n" for e in self.running.values()))
        self.stream.flush()
        self.drawn = len(self.running)

    def _redraw(self) -> None:
        self._clear()
        self._draw()
