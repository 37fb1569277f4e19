"""The lease's last-moment fence before a Nova write.

A journal row checks the executor lease when it is written, right before its step. Some
steps read the cloud between that check and their write (a service's id, before PUT
os-services), and a process paused there (SIGSTOP, a stalled VM) past its lease would then
send a write another holder no longer expects. So each Nova write is given the lease to check
once more, right before its request is sent (the BMC requests have their own fence,
host_power.py's _at_last_moment). Found by the long randomized run of issue 45: a disable
landed after another holder had begun.
"""

from __future__ import annotations

import logging

from sqlalchemy import Engine

from consolidator.core.errors import StoreError
from consolidator.execution.nova_port import BeforeRequest
from consolidator.store import journal
from consolidator.store.leases import Guard, LeaseLostError


def fence_of(guard: Guard | None) -> BeforeRequest | None:
    """The before_request of a Nova write made under this guard (None: no lease, no fence)."""
    return guard.confirm if guard is not None else None


LOG = logging.getLogger(__name__)


def nothing_sent(engine: Engine, entry: int, exc: LeaseLostError) -> None:
    """Close the journal row of a write its fence stopped: skipped, nothing sent to Nova.
    While the database does not answer, the row is left running ('apply --resume'
    reconciles such a row against the live cloud)."""
    try:
        journal.finish(engine, entry, journal.SKIPPED, f"{exc}: nothing was sent to Nova")
    except StoreError as err:
        LOG.warning("journal row %s left running (nothing was sent to Nova): %s", entry, err)
