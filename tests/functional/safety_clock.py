"""Run consolidator's command line with a clock shifted by CONSOLIDATOR_TEST_CLOCK_SHIFT_S
seconds (the safety test's processes whose clocks differ by minutes).

    CONSOLIDATOR_TEST_CLOCK_SHIFT_S=120 python tests/functional/safety_clock.py ARGS...

time-machine moves what Python reads as the wall clock (time.time, datetime.now) and lets
it tick; the monotonic clock, and the clock of the database server (SQLite's
CURRENT_TIMESTAMP, PostgreSQL's now()), are left as they are, as on a machine whose clock is
off.
"""

from __future__ import annotations

import os
import sys
import time

import time_machine


def main() -> int:
    shift = float(os.environ.get("CONSOLIDATOR_TEST_CLOCK_SHIFT_S", "0"))
    traveller = time_machine.travel(time.time() + shift, tick=True)
    traveller.start()
    from consolidator.cli import main as consolidator_main

    try:
        return int(consolidator_main(sys.argv[1:]) or 0)
    finally:
        traveller.stop()


if __name__ == "__main__":
    sys.exit(main())
