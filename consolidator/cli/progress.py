"""Live progress of an apply or rollback on stderr: on a terminal, a redrawn line per running
migration; elsewhere, plain lines as each one reaches a quarter of its memory."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

import click

from consolidator.app.context import AppContext
from consolidator.execution.progress import RUNNING, STARTED, MigrationProgress, ProgressListener
from consolidator.render.progress import milestone, progress_line

#: Move up `n` lines to the start and clear to the end of the screen.
UP_AND_CLEAR = "\x1b[{n}F\x1b[J"


class ProgressDisplay:
    """What the executor reports, with the running migrations' progress below it."""

    def __init__(self, stream: TextIO, *, tty: bool) -> None:
        self.stream, self.tty = stream, tty
        self.running: dict[str, MigrationProgress] = {}
        self.shown: dict[str, int] = {}
        self.drawn = 0
        self.lock = threading.Lock()

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


@contextmanager
def live_progress(app: AppContext) -> Iterator[ProgressListener]:
    """Show the progress of the run inside the block; yields the listener for PlanRun."""
    stream = click.get_text_stream("stderr")
    display = ProgressDisplay(stream, tty=stream.isatty())
    previous = app.report
    app.report = display.wrap(previous)
    try:
        yield display.event
    finally:
        display.close()
        app.report = previous
