"""The executor's journal in the database: a row written before every action and updated
after it.

The states and the Entry come from consolidator.core.journal_entry; they are imported here for the
store's callers: ``journal.SUCCEEDED``, ``journal.Entry``.
"""

from __future__ import annotations

import getpass
import socket
from datetime import datetime, timezone
from functools import cache
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, case, func, or_, select, update

from consolidator.core.journal_entry import (
    DURATION_BUCKETS,
    FAILED,
    RUNNING,
    SKIPPED,
    SUCCEEDED,
    UNCONFIRMED,
    Entry,
    bucket_label,
)
from consolidator.store import totals
from consolidator.store.db import translate_errors
from consolidator.store.tables import journal

#: The executor lease's name, before the cloud's identity (execution/lease_keeper.py).
EXECUTOR = "executor:"

if TYPE_CHECKING:
    from consolidator.store.leases import Guard

__all__ = ["FAILED", "RUNNING", "SKIPPED", "SUCCEEDED", "UNCONFIRMED", "Entry", "begin", "entries",
           "finish", "last", "record"]


def begin(engine: Engine, *, cloud: str, plan_id: str | None, action: str, target: str,
          params: dict[str, Any] | None = None, guard: Guard | None = None,
          check: bool = True, by: str | None = None, key: str | None = None) -> int:
    """Record an action as running, before it is attempted; return the entry id.

    With a guard, the lease is checked in the same transaction, after the insert (which on
    SQLite takes the write lock): if this process no longer holds that lease generation, or it
    expired by the database's clock, LeaseLostError is raised and nothing is written. With
    check False (a rescue, which needs no lease) the guard is only named in the row. by: who
    asked (a Keystone user through the API); default: this process's user@host. key: the
    cloud's identity, which every clouds.yaml name of it shares; default: the one the
    guard's executor lease is named after.
    """
    now = datetime.now(timezone.utc)
    with translate_errors(engine), engine.begin() as conn:
        result = conn.execute(journal.insert().values(
            cloud=cloud, plan_id=plan_id, action=action, target=target, params=params or {},
            state=RUNNING, created_at=now, started_at=now,
            lease_holder=guard.holder if guard else None,
            lease_generation=guard.generation if guard else None,
            operator=(by or operator())[:255], cloud_key=key or _leased_key(guard)))
        if guard is not None and check:
            guard.check(conn)   # raising rolls the insert back
        key = result.inserted_primary_key
        assert key is not None, "an insert returns its primary key"
        return int(key[0])


def _leased_key(guard: Guard | None) -> str | None:
    """The cloud identity an executor lease is named after (``executor:<identity>``)."""
    if guard is None or not guard.name.startswith(EXECUTOR):
        return None
    return guard.name[len(EXECUTOR):]


@cache
def operator() -> str:
    """user@host of this process: who a journal row's action was run by."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):   # no name for the uid (a container): the uid, as ps does
        import os

        user = str(os.getuid())
    return f"{user}@{socket.gethostname()}"


def record(engine: Engine, *, cloud: str, plan_id: str | None, action: str, target: str,
           state: str, result: str, params: dict[str, Any] | None = None,
           guard: Guard | None = None, by: str | None = None) -> int:
    """Record an action decided without a call (skipped, found already done, or an
    operator's decision such as an approval)."""
    entry = begin(engine, cloud=cloud, plan_id=plan_id, action=action, target=target,
                  params=params, guard=guard, by=by)
    finish(engine, entry, state, result)
    return entry


def finish(engine: Engine, entry_id: int, state: str, result: str) -> None:
    """Record how an action ended; a live migration's end is added to the metric totals
    in the same transaction (once: only when its row leaves running)."""
    now = datetime.now(timezone.utc)
    with translate_errors(engine), engine.begin() as conn:
        query = (select(journal.c.action, journal.c.state, journal.c.started_at)
                 .where(journal.c.id == entry_id))
        if conn.dialect.name != "sqlite":   # the newest row, locked: counted once
            query = query.with_for_update()
        before = conn.execute(query).first()
        conn.execute(update(journal).where(journal.c.id == entry_id).values(
            state=state, result=result[:4000], finished_at=now))
        if before is not None and before.action == "migrate" and before.state == RUNNING:
            _count_migration(conn, state, before.started_at, now)


def _count_migration(conn: Connection, state: str, started: datetime | None,
                     finished: datetime) -> None:
    """journal_migrations_total{result}, and a succeeded one's duration in the histogram."""
    if state not in (SUCCEEDED, FAILED):
        return
    totals.add_on(conn, "journal_migrations_total", {"result": state})
    if state != SUCCEEDED or started is None:
        return
    if started.tzinfo is None:
        started = started.replace(tzinfo=timezone.utc)
    seconds = max(0.0, (finished - started).total_seconds())
    for bound in (*DURATION_BUCKETS, float("inf")):
        if seconds <= bound:
            totals.add_on(conn, "migration_duration_seconds_bucket",
                          {"le": bucket_label(bound)})
    totals.add_on(conn, "migration_duration_seconds_count", {})
    totals.add_on(conn, "migration_duration_seconds_sum", {}, seconds)


def entries(engine: Engine, *, plan_id: str | None = None, cloud: str | None = None,
            state: str | None = None, limit: int | None = None,
            since: datetime | None = None, actions: tuple[str, ...] = (),
            after: int = 0, key: str | None = None) -> list[Entry]:
    """Journal rows, oldest first (since: created at or after; actions: any of them; after:
    with an id above it). With key (the cloud's identity), a cloud's rows are those under its
    name or its identity: every clouds.yaml name of one cloud reads the same rows."""
    query = select(journal).order_by(journal.c.id)
    if plan_id:
        query = query.where(journal.c.plan_id == plan_id)
    if after:
        query = query.where(journal.c.id > after)
    if since is not None:
        query = query.where(journal.c.created_at >= since)
    if actions:
        query = query.where(journal.c.action.in_(actions))
    if cloud and key:
        query = query.where(or_(journal.c.cloud == cloud, journal.c.cloud_key == key))
    elif cloud:
        query = query.where(journal.c.cloud == cloud)
    if state:
        query = query.where(journal.c.state == state)
    if limit:
        query = query.limit(limit)
    with translate_errors(engine), engine.connect() as conn:
        return [Entry(**row._mapping) for row in conn.execute(query)]


def actions_seen(engine: Engine) -> set[str]:
    """Every action the journal holds a row of."""
    with translate_errors(engine), engine.connect() as conn:
        return {row[0] for row in conn.execute(select(journal.c.action).distinct())}


def last(engine: Engine, *, cloud: str, action: str, target: str) -> Entry | None:
    """The newest row of one action on one target in a cloud's journal, or None."""
    query = select(journal).where(journal.c.cloud == cloud, journal.c.action == action,
                                  journal.c.target == target).order_by(
        journal.c.id.desc()).limit(1)
    with translate_errors(engine), engine.connect() as conn:
        row = conn.execute(query).first()
    return Entry(**row._mapping) if row is not None else None


def last_id(engine: Engine) -> int:
    """The id of the newest journal row (0 when there is none)."""
    with translate_errors(engine), engine.connect() as conn:
        return int(conn.execute(select(func.max(journal.c.id))).scalar() or 0)


def restamp(engine: Engine, *, after_id: int, at: datetime) -> None:
    """Give the rows newer than after_id the time `at`: a trace replay's journal runs on the
    replay's simulated clock, so that what reads it by time (the cool-down) sees its day."""
    with translate_errors(engine), engine.begin() as conn:
        conn.execute(journal.update().where(journal.c.id > after_id).values(
            created_at=at, started_at=at,
            finished_at=case((journal.c.finished_at.is_(None), None), else_=at)))


def power_actions(engine: Engine, *, cloud: str | None, since: datetime) -> list[Entry]:
    """The power_on and power_off rows begun since a time that did not fail or skip, oldest
    first (the cool-down's history)."""
    query = select(journal).where(journal.c.action.in_(("power_on", "power_off")),
                                  journal.c.created_at >= since,
                                  journal.c.state.in_(("running", "succeeded"))
                                  ).order_by(journal.c.id)
    if cloud:
        query = query.where(journal.c.cloud == cloud)
    with translate_errors(engine), engine.connect() as conn:
        return [Entry(**row._mapping) for row in conn.execute(query)]
