"""The drain's own executor step: disable each host a drain plan empties, journaled, before
its first migration, so that the scheduler places nothing new on it meanwhile."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Engine

from consolidator.core.errors import ConsolidatorError
from consolidator.core.model import Host
from consolidator.execution.nova_fence import fence_of, nothing_sent
from consolidator.execution.nova_port import NovaPort
from consolidator.store import journal
from consolidator.store.leases import Guard, LeaseLostError


def disable_for_drain(engine: Engine, nova: NovaPort, cloud: str, guard: Guard | None,
                      plan_id: str, host: Host, reason: str,
                      report: Callable[[str], None]) -> str | None:
    """Disable one host's nova-compute with the drain's reason; None when done, else why
    not. The journal row checks the lease first, and again right before the request
    (LeaseLostError, and no call, if lost)."""
    entry = journal.begin(engine, cloud=cloud, plan_id=plan_id, action="disable",
                          target=host.name, params={"reason": reason}, guard=guard)
    report(f"  disable {host.name}: {reason}")
    try:
        nova.set_service(host.compute_host, enabled=False, reason=reason,
                         before_request=fence_of(guard))
    except LeaseLostError as exc:
        nothing_sent(engine, entry, exc)
        raise
    except ConsolidatorError as exc:
        journal.finish(engine, entry, journal.FAILED, str(exc))
        return str(exc)
    journal.finish(engine, entry, journal.SUCCEEDED, "disabled for the drain")
    return None
