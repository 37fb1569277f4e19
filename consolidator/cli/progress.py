"""Live progress of an apply or rollback on stderr: on a terminal, a redrawn line per running
migration; elsewhere, plain lines as each one reaches a quarter of its memory."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from consolidator.app.context import AppContext
from consolidator.render.progress import ProgressDisplay

if TYPE_CHECKING:
    from consolidator.app.apply import ProgressListener


@contextmanager
def live_progress(app: AppContext) -> Iterator[ProgressListener]:
    """Show the progress of the run inside the block; yields the listener for PlanRun."""
    stream = sys.stderr
    display = ProgressDisplay(stream, tty=stream.isatty())
    previous = app.report
    app.report = display.wrap(previous)
    try:
        yield display.event
    finally:
        display.close()
        app.report = previous
