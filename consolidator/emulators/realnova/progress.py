"""What the real-Nova backend says while it boots the scenario (it imports no Nova)."""

from __future__ import annotations

import time
from collections.abc import Callable

from consolidator.core.wording import plural


class BootProgress:
    """Says how the boot goes: at every tenth of the servers, and at least every `every`
    seconds (booting 200 servers took about 300 s without a word)."""

    def __init__(self, total: int, echo: Callable[[str], None], every: float = 15.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total, self.echo, self.every, self.clock = total, echo, every, clock
        self.started = self.last = clock()
        self.step = max(1, total // 10)
        self.said = 0

    def __call__(self, booted: int) -> None:
        """`booted` servers are ACTIVE on their hosts."""
        now = self.clock()
        if booted // self.step > self.said // self.step or now - self.last >= self.every:
            self.said, self.last = booted, now
            self.echo(f"booted {booted} of {plural(self.total, 'server')} "
                      f"({now - self.started:.0f} s)")
