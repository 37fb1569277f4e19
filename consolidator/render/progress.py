"""One line per running live migration: a bar and Nova's memory counters where it gives them."""

from __future__ import annotations

from consolidator.execution.progress import MigrationProgress

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
