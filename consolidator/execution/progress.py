"""Progress of running live migrations: the events the executor emits while it polls."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

#: Phases of one migration's progress.
STARTED, RUNNING, DONE, FAILED = "started", "running", "done", "failed"


@dataclass(frozen=True)
class MigrationProgress:
    """One look at a running live migration."""

    instance: str
    source: str
    destination: str
    phase: str
    elapsed: float
    #: Nova's memory_* fields of the migration record (microversion 2.23+), when it gives them.
    memory_total_bytes: int | None = None
    memory_processed_bytes: int | None = None
    memory_remaining_bytes: int | None = None

    @property
    def fraction(self) -> float | None:
        """Share of the memory copied, when Nova says."""
        total, remaining = self.memory_total_bytes, self.memory_remaining_bytes
        if not total or remaining is None:
            return None
        return min(max(1.0 - remaining / total, 0.0), 1.0)


ProgressListener = Callable[[MigrationProgress], None]
#: Told of each live migration as it starts and ends: the move, its phase (STARTED, DONE or
#: FAILED), seconds since it started, and why it failed (None otherwise).
MigrationListener = Callable[[Any, str, float, "str | None"], None]


def poll_delays(first: float, cap: float) -> Iterator[float]:
    """Seconds to wait before each read of a migrating server: `first`, doubling up to
    `cap` (a short migration is seen done at once, a long one is not read too often)."""
    delay = min(first, cap) if first > 0 else cap
    while True:
        yield delay
        delay = min(delay * 2, cap)
