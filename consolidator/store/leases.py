"""Database leases: one holder at a time per name, on SQLite and PostgreSQL alike.

Acquiring is one conditional UPDATE (free, expired or already ours) or one INSERT, so two
processes racing for a lease cannot both win on either database.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from sqlalchemy import Engine, delete, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from consolidator.errors import ConsolidatorError
from consolidator.store.db import translate_errors
from consolidator.store.tables import leases


class LeaseHeldError(ConsolidatorError):
    """Another process holds the lease."""


@dataclass(frozen=True)
class Lease:
    """Who holds a lease, and until when."""

    name: str
    holder: str
    acquired_at: datetime
    expires_at: datetime


def make_holder() -> str:
    """A holder id naming this process: host, pid and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def acquire(engine: Engine, name: str, holder: str, ttl: float) -> bool:
    """Take or renew the lease if it is free, expired or ours; True if we hold it now."""
    now = datetime.now(timezone.utc)
    expires = now + timedelta(seconds=ttl)
    with translate_errors(engine):
        with engine.begin() as conn:
            taken = conn.execute(update(leases).where(
                leases.c.name == name,
                or_(leases.c.holder == holder, leases.c.expires_at < now)).values(
                holder=holder, acquired_at=now, expires_at=expires)).rowcount
        if taken:
            return True
        try:
            with engine.begin() as conn:
                conn.execute(insert(leases).values(name=name, holder=holder, acquired_at=now,
                                                   expires_at=expires))
            return True
        except IntegrityError:
            return False


def current(engine: Engine, name: str) -> Lease | None:
    """The lease's holder, if any holds it (expired leases count as free)."""
    with translate_errors(engine), engine.connect() as conn:
        row = conn.execute(select(leases).where(leases.c.name == name)).first()
    if row is None or row.expires_at < datetime.now(timezone.utc):
        return None
    return Lease(name=row.name, holder=row.holder, acquired_at=row.acquired_at,
                 expires_at=row.expires_at)


def holder_is_dead(holder: str) -> bool:
    """Whether a holder id names a process of this machine that no longer exists."""
    host, _, rest = holder.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def take_over(engine: Engine, name: str, dead: str, holder: str, ttl: float) -> bool:
    """Take a lease from a holder known to be dead; True if it was still theirs."""
    now = datetime.now(timezone.utc)
    with translate_errors(engine), engine.begin() as conn:
        return bool(conn.execute(update(leases).where(
            leases.c.name == name, leases.c.holder == dead).values(
            holder=holder, acquired_at=now,
            expires_at=now + timedelta(seconds=ttl))).rowcount)


def acquire_or_raise(engine: Engine, name: str, holder: str, ttl: float, what: str) -> None:
    """Take the lease or raise LeaseHeldError naming the holder.

    A lease held by a process of this machine that has died (kill -9) is taken over at once
    instead of waiting for it to expire.
    """
    if not acquire(engine, name, holder, ttl):
        lease = current(engine, name)
        if lease is not None and holder_is_dead(lease.holder) and \
                take_over(engine, name, lease.holder, holder, ttl):
            return
        lease = current(engine, name)
        who = (f"{lease.holder} (until {lease.expires_at:%H:%M:%S} UTC)" if lease
               else "another process")
        raise LeaseHeldError(f"{what} is already running: {who} holds lease {name!r}")


def release(engine: Engine, name: str, holder: str) -> None:
    """Give the lease up, if we hold it."""
    with translate_errors(engine), engine.begin() as conn:
        conn.execute(delete(leases).where(leases.c.name == name, leases.c.holder == holder))
