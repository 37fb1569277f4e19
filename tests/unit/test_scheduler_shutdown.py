"""The daemon's SIGTERM handler and APScheduler's job processing (found by a suite run under
a load of 12: 'daemon' exited 1 with "JobLookupError: 'No job by the id of watchdog was
found'").

A signal handler runs in the main thread, which is also the BlockingScheduler's: a SIGTERM
that lands while the scheduler processes its due jobs re-enters the scheduler's re-entrant
job-store lock, and a shutdown made there empties the job store under the loop, which then
fails to update the job it just ran. The handler now shuts the scheduler down from another
thread, which waits for the job processing to end.
"""

from __future__ import annotations

import threading
import time

from apscheduler.schedulers.base import STATE_RUNNING, STATE_STOPPED
from apscheduler.schedulers.blocking import BlockingScheduler

from consolidator.daemon import shut_down_scheduler


def _running(scheduler: BlockingScheduler) -> threading.Thread:
    """The scheduler's loop, in a thread of its own (the daemon's is the main thread)."""
    loop = threading.Thread(target=scheduler.start, daemon=True)
    loop.start()
    deadline = time.monotonic() + 30
    while scheduler.state != STATE_RUNNING and time.monotonic() < deadline:
        time.sleep(0.01)
    assert scheduler.state == STATE_RUNNING
    return loop


def test_a_shutdown_asked_inside_the_job_processing_waits_for_it() -> None:
    scheduler = BlockingScheduler()
    scheduler.add_job(print, "interval", id="watchdog", seconds=3600)
    loop = _running(scheduler)
    with scheduler._jobstores_lock:          # as the loop holds it, inside _process_jobs()
        thread = shut_down_scheduler(scheduler)      # the signal handler, in that thread
        deadline = time.monotonic() + 30    # the shutdown has begun: it waits for the lock
        while scheduler.state != STATE_STOPPED and time.monotonic() < deadline:
            time.sleep(0.01)
        assert scheduler.state == STATE_STOPPED
        # the loop can still update the job it ran: the job store is not emptied under it
        assert scheduler._jobstores["default"].lookup_job("watchdog") is not None
    thread.join(timeout=30)
    loop.join(timeout=30)
    assert not thread.is_alive() and not loop.is_alive()
    assert scheduler._jobstores["default"].get_all_jobs() == []


def test_a_second_signal_is_harmless() -> None:
    scheduler = BlockingScheduler()
    loop = _running(scheduler)
    shut_down_scheduler(scheduler).join(timeout=30)
    shut_down_scheduler(scheduler).join(timeout=30)       # no SchedulerNotRunningError
    loop.join(timeout=30)
    assert scheduler.state == STATE_STOPPED and not loop.is_alive()
