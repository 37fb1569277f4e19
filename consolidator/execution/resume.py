"""``apply --resume``: settle the journal of an interrupted run against the live state."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from sqlalchemy import Engine

from consolidator.core.model import Host
from consolidator.core.plan import StoredPlan
from consolidator.core.wording import plural
from consolidator.execution.nova_port import NovaPort
from consolidator.openstack.nova import ServerState
from consolidator.store import journal


def settle(nova: NovaPort, server_id: str, *, timeout: float, poll: float,
           report: Callable[[str], None]) -> ServerState | None:
    """The server once a migration that outlived its executor has ended (or timed out)."""
    deadline = time.monotonic() + timeout
    server = nova.server(server_id)
    if server is not None and (server.status == "MIGRATING" or server.task_state):
        report(f"resume: waiting for the migration of {server_id} to end")
    while server is not None and (server.status == "MIGRATING" or server.task_state):
        if time.monotonic() > deadline:
            break
        time.sleep(poll)
        server = nova.server(server_id)
    return server


def reconcile(engine: Engine, nova: NovaPort, hosts: Mapping[str, Host], plan: StoredPlan, *,
              timeout: float, poll: float, report: Callable[[str], None]) -> set[str]:
    """Finish every journal row the interrupted run left running, from the live state;
    return the instances already where the plan wants them."""
    moves = {m.instance_id: m for m in plan.draft.migrations}
    done: set[str] = set()
    for entry in journal.entries(engine, plan_id=plan.id, state=journal.RUNNING):
        move = moves.get(entry.target)
        if move is None:
            journal.finish(engine, entry.id, journal.FAILED, "interrupted; reconciled on resume")
            continue
        server = settle(nova, move.instance_id, timeout=timeout, poll=poll, report=report)
        there = (server is not None and server.status == "ACTIVE"
                 and server.compute_host == hosts[move.destination].compute_host)
        journal.finish(engine, entry.id, journal.SUCCEEDED if there else journal.FAILED,
                       "found on its destination on resume" if there
                       else "interrupted; the instance is not on its destination")
    for move in plan.draft.migrations:
        server = nova.server(move.instance_id)
        if server is not None and server.status == "ACTIVE" and \
                server.compute_host == hosts[move.destination].compute_host:
            done.add(move.instance_id)
    report(f"resume: {len(done)} of {plural(len(moves), 'migration')} already done")
    return done
