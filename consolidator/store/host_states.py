"""The recorded state of each host consolidator acts on (core/host_gate.py STATES), and the
journal of its changes: every change is one row of host_state_changes, written in the same
transaction as the new state."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, Row, Select, delete, insert, select, update

from consolidator.store.db import translate_errors
from consolidator.store.journal import operator
from consolidator.store.leases import db_clock
from consolidator.store.tables import host_state_changes, host_states

if TYPE_CHECKING:
    from consolidator.store.leases import Guard


@dataclass(frozen=True)
class HostState:
    """A host's recorded state: since when, set by which actor (and plan), and why."""

    host: str
    state: str
    since: datetime
    actor: str
    plan_id: str | None = None
    why: str | None = None


@dataclass(frozen=True)
class StateChange:
    """One journaled change of a host's state."""

    host: str
    before: str | None
    after: str
    at: datetime
    actor: str
    plan_id: str | None
    why: str | None


def recorded(engine: Engine, cloud: str, host: str, *, legacy: str | None = None
             ) -> HostState | None:
    """The host's recorded state, or None if consolidator never recorded one. `cloud` is the
    cloud's key (its identity); `legacy`, the clouds.yaml name an older release recorded
    states under, read while the key has none."""
    with translate_errors(engine), engine.connect() as conn:
        row = _row(conn, cloud, host, legacy)
    if row is None:
        return None
    return HostState(row.host, row.state, row.since, row.actor, row.plan_id, row.why)


def _row(conn: Connection, cloud: str, host: str, legacy: str | None, *,
         lock: bool = False) -> Row | None:
    """The host's row under the key, else under the legacy name (locked FOR UPDATE on a
    database server with lock)."""
    for key in dict.fromkeys((cloud, legacy or cloud)):
        query = select(host_states).where(host_states.c.cloud == key,
                                          host_states.c.host == host)
        row = conn.execute(_locked(conn, query) if lock else query).first()
        if row is not None:
            return row
    return None


def all_recorded(engine: Engine, cloud: str, *, legacy: str | None = None
                 ) -> dict[str, HostState]:
    """Every recorded host state of a cloud (its key; with those an older release recorded
    under the legacy name where the key has none), by host."""
    keys = list(dict.fromkeys((legacy or cloud, cloud)))
    with translate_errors(engine), engine.connect() as conn:
        rows = sorted(conn.execute(select(host_states).where(host_states.c.cloud.in_(keys))),
                      key=lambda r: r.cloud == cloud)       # the key's rows win
    return {r.host: HostState(r.host, r.state, r.since, r.actor, r.plan_id, r.why)
            for r in rows}


def change(engine: Engine, cloud: str, host: str, state: str, *, actor: str,
           plan_id: str | None = None, why: str | None = None,
           guard: Guard | None = None, legacy: str | None = None,
           only_from: str | None = None) -> bool:
    """Record the host's new state and journal the change (nothing when it is already in
    that state, or, with only_from, when the state it replaces is another); whether it
    changed. With a guard, the lease generation is checked in the
    same transaction, after the writes: LeaseLostError, and nothing recorded, if it is no
    longer ours (the fence right before a BMC request). A state an older release recorded
    under the legacy name is moved under the key (the cloud's identity) by the change."""
    with translate_errors(engine), engine.begin() as conn:
        now = db_clock(conn)            # the one clock every process compares against
        # locked (a locking read also sees the newest committed row under InnoDB's
        # REPEATABLE READ): a concurrent change waits, so that `before` is the state replaced
        found = _row(conn, cloud, host, legacy, lock=True)
        if found is not None and found.cloud != cloud:      # adopt the name's row
            conn.execute(delete(host_states).where(host_states.c.cloud == found.cloud,
                                                   host_states.c.host == host))
            conn.execute(insert(host_states).values(
                cloud=cloud, host=host, state=found.state, since=found.since,
                plan_id=found.plan_id, actor=found.actor, why=found.why))
        row = found
        before = row.state if row is not None else None
        if before == state or (only_from is not None and before != only_from):
            if guard is not None:
                guard.check(conn)
            return False
        values = {"state": state, "since": now, "plan_id": plan_id, "actor": actor,
                  "why": (why or "")[:4000] or None}
        if row is None:
            conn.execute(insert(host_states).values(cloud=cloud, host=host, **values))
        else:
            conn.execute(update(host_states).where(host_states.c.cloud == cloud,
                                                   host_states.c.host == host).values(**values))
        conn.execute(insert(host_state_changes).values(
            cloud=cloud, host=host, before=before, after=state, at=now, plan_id=plan_id,
            actor=actor, why=values["why"], operator=operator()))
        if guard is not None:
            guard.check(conn)   # raising rolls the writes back
    return True


def _locked(conn: Connection, query: Select) -> Select:
    """query as SELECT ... FOR UPDATE on a database server (SQLite locks the whole file at
    the transaction's first write instead)."""
    return query if conn.dialect.name == "sqlite" else query.with_for_update()


def age_s(engine: Engine, state: HostState) -> float:
    """Seconds since the state was recorded, by the database's clock (which recorded it)."""
    with translate_errors(engine), engine.connect() as conn:
        return (db_clock(conn) - state.since).total_seconds()


def overdue(engine: Engine, state: str, seconds: float) -> list[HostState]:
    """The hosts of every cloud recorded in `state` for longer than `seconds`, by the
    database's clock (a shutdown pending past [executor] power_timeout)."""
    with translate_errors(engine), engine.connect() as conn:
        now = db_clock(conn)
        rows = conn.execute(select(host_states).where(host_states.c.state == state)).all()
    return [HostState(r.host, r.state, r.since, r.actor, r.plan_id, r.why) for r in rows
            if (now - r.since).total_seconds() > seconds]


def forget(engine: Engine, cloud: str, host: str) -> None:
    """Drop the host's recorded state (its changes stay journaled)."""
    with translate_errors(engine), engine.begin() as conn:
        conn.execute(delete(host_states).where(host_states.c.cloud == cloud,
                                               host_states.c.host == host))


def changes(engine: Engine, cloud: str, host: str | None = None) -> list[StateChange]:
    """The journaled state changes of a cloud (of one host), oldest first."""
    query = select(host_state_changes).where(host_state_changes.c.cloud == cloud)
    if host is not None:
        query = query.where(host_state_changes.c.host == host)
    with translate_errors(engine), engine.connect() as conn:
        rows = conn.execute(query.order_by(host_state_changes.c.id)).all()
    return [StateChange(r.host, r.before, r.after, r.at, r.actor, r.plan_id, r.why)
            for r in rows]
