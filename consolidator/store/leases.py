"""Database leases: one holder at a time per name, on SQLite, PostgreSQL and MariaDB/MySQL
alike.

Expiry is judged by the database's clock, in the same statement that takes, renews or checks
a lease, never by the caller's clock: a process whose clock runs ahead cannot take a lease that
is still held. Acquiring is one conditional UPDATE (free, expired or already ours) or, the
first time, one INSERT, so two processes racing for a lease cannot both win on either database.

A holder is a random token, not a host name or a process id: a lease is judged only by its
expiry on the database's clock, so a process in another PID namespace (a container sharing the
host's name) can never be mistaken for a dead holder. A holder killed with kill -9 keeps its
lease until it expires (one TTL).

Each lease carries a generation, incremented whenever it changes holder (not when the same
holder renews it). ``acquire`` returns a Guard naming the holder and generation; the journal
checks a guard in the same transaction as each row written before a destructive call.

On MariaDB and MySQL (InnoDB, REPEATABLE READ) every compare-and-set is a write, which reads
the newest committed row, not the transaction's snapshot: taking, renewing and releasing are
conditional UPDATEs, and a guard's check is a conditional UPDATE that changes the row (it adds
a microsecond to the expiry), so that on a Galera cluster it is certified against a take-over
made on another node (a locking read is not replicated there; see store/mysql.py).
"""

from __future__ import annotations

import secrets
import threading
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from sqlalchemy import (
    Connection,
    DateTime,
    Engine,
    Interval,
    String,
    and_,
    case,
    func,
    insert,
    literal,
    literal_column,
    or_,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.sql.elements import ColumnElement

from consolidator.core.errors import ConsolidatorError, StoreError
from consolidator.store.db import MYSQL_DIALECTS, translate_errors
from consolidator.store.tables import leases

#: What a released lease's holder becomes, so that the next holder is a change of holder.
NOBODY = ""


class LeaseHeldError(ConsolidatorError):
    """Another process holds the lease."""


class LeaseLostError(ConsolidatorError):
    """This process no longer holds the lease generation it acted under."""


@dataclass(frozen=True)
class Lease:
    """Who holds a lease, and until when."""

    name: str
    holder: str
    acquired_at: datetime
    expires_at: datetime
    generation: int = 0


@dataclass(eq=False)
class Guard:
    """Proof of holding one generation of a lease, checked before each destructive call.

    ``revoke`` marks it lost in this process (a failed renewal); from then on ``check`` fails
    without asking the database.
    """

    engine: Engine
    name: str
    holder: str
    generation: int
    _lost: threading.Event = field(default_factory=threading.Event, repr=False)
    why: str = ""
    #: Other leases held together with this one, by the same holder (a cloud's lease under
    #: its identity and under the clouds.yaml name it was reached by): each is checked and
    #: renewed with it, and losing any is losing them all.
    fellows: tuple[Guard, ...] = ()

    @property
    def lost(self) -> bool:
        """Whether this process has given the lease up for lost."""
        return self._lost.is_set() or any(f.lost for f in self.fellows)

    def revoke(self, why: str) -> None:
        """Count the lease as lost: every later check fails."""
        if not self._lost.is_set():
            self.why = why
            self._lost.set()

    def _why(self) -> str:
        lost = next((f for f in self.fellows if f.lost), None)
        return self.why or (f"{lost.name!r}: {lost.why}" if lost is not None else "")

    def confirm(self) -> None:
        """The fence right before a request sent a while after the journal row's check (a
        read of the cloud came between, or a pause): the lease checked again in a
        transaction of its own; LeaseLostError if it is no longer ours, or if the database
        does not answer (fail closed, as a renewal that fails in any way: the lease is
        counted lost)."""
        try:
            with translate_errors(self.engine), self.engine.begin() as conn:
                self.check(conn)
        except StoreError as exc:
            self.revoke(f"the database did not answer its check: {exc}")
            raise LeaseLostError(f"lost the lease {self.name!r}: {self.why}") from None

    def check(self, conn: Connection) -> None:
        """Raise LeaseLostError unless the lease, read on conn (inside the caller's
        transaction, locked against a take-over until it ends), still has this holder and
        generation and has not expired by the database's clock."""
        if self.lost:
            raise LeaseLostError(f"lost the lease {self.name!r}: {self._why()}")
        for fellow in self.fellows:
            try:
                fellow.check(conn)
            except LeaseLostError:
                self.revoke(f"{fellow.name!r}: {fellow.why}")
                raise
        dialect = conn.dialect.name
        ours = (leases.c.name == self.name, leases.c.holder == self.holder,
                leases.c.generation == self.generation, leases.c.expires_at > db_now(dialect))
        if dialect in MYSQL_DIALECTS:
            held = conn.execute(update(leases).where(*ours).values(
                expires_at=_plus(leases.c.expires_at, 0.000001))).rowcount == 1
        else:
            query = select(leases.c.generation).where(*ours)
            if dialect != "sqlite":
                query = query.with_for_update(read=True)
            held = conn.execute(query).first() is not None
        if not held:
            self.revoke(f"generation {self.generation} is no longer current or has expired")
            raise LeaseLostError(f"lost the lease {self.name!r}: {self.why}")

    def renew(self, ttl: float) -> bool:
        """Extend the lease by ttl from the database's now if this generation still holds
        it (even if it expired meanwhile: nobody else took it); False if it does not."""
        if self.lost:
            return False
        dialect = self.engine.dialect.name
        with translate_errors(self.engine), self.engine.begin() as conn:
            held = bool(conn.execute(update(leases).where(
                leases.c.name == self.name, leases.c.holder == self.holder,
                leases.c.generation == self.generation).values(
                expires_at=db_now(dialect, ttl))).rowcount)
        return held and all([f.renew(ttl) for f in self.fellows])


def db_now(dialect: str, plus: float = 0.0) -> ColumnElement:
    """The database's current UTC time (plus seconds), as a SQL expression comparable with
    UTCDateTime columns: timestamptz on PostgreSQL; on SQLite the text form SQLAlchemy stores
    (UTC, 'YYYY-MM-DD HH:MM:SS.ffffff')."""
    if dialect == "sqlite":
        stamp = func.strftime("%Y-%m-%d %H:%M:%f", "now", f"{plus:+.3f} seconds",
                              type_=String)
        return stamp.concat("000")
    if dialect in MYSQL_DIALECTS:   # DATETIME(6) columns holding UTC
        return _plus(func.utc_timestamp(literal_column("6")), plus)
    now = func.now()
    return now + literal(timedelta(seconds=plus), Interval()) if plus else now


def _plus(stamp: ColumnElement, seconds: float) -> ColumnElement:
    """MariaDB's and MySQL's stamp + seconds, to the microsecond."""
    if not seconds:
        return stamp
    return func.timestampadd(literal_column("MICROSECOND"), round(seconds * 1e6), stamp,
                             type_=DateTime)


def db_clock(conn: Connection) -> datetime:
    """The database's current UTC time, timezone-aware: the one clock every time compared
    across processes is read from (a process's own clock may run minutes away)."""
    value = conn.execute(select(db_now(conn.dialect.name))).scalar_one()
    if isinstance(value, str):          # SQLite: the text form db_now gives
        value = datetime.fromisoformat(value[:26])
    return value.replace(tzinfo=timezone.utc) if value.tzinfo is None \
        else value.astimezone(timezone.utc)


def make_holder() -> str:
    """A new holder token: random, naming no host or process (a lease is judged only by its
    expiry on the database's clock)."""
    return f"holder-{secrets.token_hex(8)}"


def acquire(engine: Engine, name: str, holder: str, ttl: float) -> Guard | None:
    """Take or renew the lease if it is free, expired or ours; its Guard if we hold it now,
    else None. Taking it from another holder (or after a release) starts a new generation."""
    dialect = engine.dialect.name
    now, expires = db_now(dialect), db_now(dialect, ttl)
    ours = leases.c.holder == holder
    with translate_errors(engine):
        with engine.begin() as conn:
            # The holder is set last: MySQL evaluates SET's assignments in order, each
            # seeing the ones before it (the others read the holder it replaces).
            taken = conn.execute(update(leases).where(
                leases.c.name == name, or_(ours, leases.c.expires_at < now)).ordered_values(
                (leases.c.acquired_at, case((ours, leases.c.acquired_at), else_=now)),
                (leases.c.generation, case((ours, leases.c.generation),
                                           else_=leases.c.generation + 1)),
                (leases.c.expires_at, expires), (leases.c.holder, holder))).rowcount
            if taken:
                return Guard(engine, name, holder, _generation(conn, name, holder))
        try:
            with engine.begin() as conn:
                conn.execute(insert(leases).values(name=name, holder=holder, acquired_at=now,
                                                   expires_at=expires, generation=1))
                return Guard(engine, name, holder, _generation(conn, name, holder))
        except IntegrityError:
            return None


def _generation(conn: Connection, name: str, holder: str) -> int:
    return int(conn.execute(select(leases.c.generation).where(
        leases.c.name == name, leases.c.holder == holder)).scalar_one())


def current(engine: Engine, name: str) -> Lease | None:
    """The lease's holder, if any holds it (expired leases count as free, by the database's
    clock)."""
    with translate_errors(engine), engine.connect() as conn:
        row = conn.execute(select(leases).where(
            leases.c.name == name, leases.c.holder != NOBODY,
            leases.c.expires_at > db_now(engine.dialect.name))).first()
    if row is None:
        return None
    return Lease(name=row.name, holder=row.holder, acquired_at=row.acquired_at,
                 expires_at=row.expires_at, generation=row.generation)


def acquire_or_raise(engine: Engine, name: str, holder: str, ttl: float, what: str) -> Guard:
    """Take the lease and return its Guard, or raise LeaseHeldError naming the holder and
    when its lease expires (a holder that died keeps it until then)."""
    guard = acquire(engine, name, holder, ttl)
    if guard is not None:
        return guard
    lease = current(engine, name)
    who = (f"{lease.holder} (until {lease.expires_at:%H:%M:%S} UTC)" if lease
           else "another process")
    raise LeaseHeldError(f"{what} is already running: {who} holds lease {name!r}")


def acquire_all_or_raise(engine: Engine, names: list[str], holder: str, ttl: float,
                         what: str) -> Guard:
    """Take every named lease for one holder, the first one's Guard carrying the others as
    its fellows; LeaseHeldError (and none kept) when any is held by another holder."""
    taken: list[Guard] = []
    try:
        for name in dict.fromkeys(names):
            taken.append(acquire_or_raise(engine, name, holder, ttl, what))
    except ConsolidatorError:
        for guard in taken:
            release(engine, guard.name, holder)
        raise
    first = taken[0]
    first.fellows = tuple(taken[1:])
    return first


def release(engine: Engine, name: str, holder: str) -> None:
    """Give the lease up, if we hold it. The row stays, expired and held by nobody, so that
    its generation only ever grows."""
    dialect = engine.dialect.name
    with translate_errors(engine), engine.begin() as conn:
        conn.execute(update(leases).where(
            and_(leases.c.name == name, leases.c.holder == holder)).values(
            holder=NOBODY, expires_at=db_now(dialect, -1.0)))
