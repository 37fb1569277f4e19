"""Bounds on row locks, set on every PostgreSQL and MariaDB session the store opens.

An actor stopped inside a transaction (SIGSTOP, a frozen VM, a debugger) keeps its row locks:
the lease row its fence read, a plan's row. Without a bound, every other actor that writes
that row waits for ever, the daemon and an operator's command alike. So:

- the server ends a transaction that stood idle for ``IDLE_TRANSACTION_SECONDS`` (it is
  rolled back, its locks freed; the stopped process, resumed, is told and writes nothing);
- a statement waits at most ``LOCK_WAIT_SECONDS`` for another transaction's lock, then fails
  with a message instead of hanging.

The store's transactions are short (no network call is made inside one), so neither bound is
reached by an actor that runs. SQLite has its own bound: the busy timeout of 30 s.
"""

from __future__ import annotations

from typing import Any

#: The server ends a transaction left idle this long (PostgreSQL's
#: idle_in_transaction_session_timeout, MariaDB's idle_transaction_timeout).
IDLE_TRANSACTION_SECONDS = 30
#: A statement waits this long for a lock another transaction holds (PostgreSQL's
#: lock_timeout, InnoDB's innodb_lock_wait_timeout), then fails. Longer than the idle bound,
#: so that a wait behind a stopped actor ends with the stopped actor's transaction.
LOCK_WAIT_SECONDS = 60

#: PostgreSQL's SQLSTATEs: lock_not_available, idle_in_transaction_session_timeout.
_PG_LOCK_TIMEOUT, _PG_IDLE_TIMEOUT = "55P03", "25P03"
#: MariaDB's errors: lock wait timeout; the connection lost, gone away.
_MY_LOCK_TIMEOUT, _MY_GONE = 1205, (2006, 2013)


def on_postgresql_connect(dbapi_conn: Any, _record: object) -> None:
    """Bound a new PostgreSQL session's idle transactions and lock waits."""
    cursor = dbapi_conn.cursor()
    try:
        cursor.execute(f"SET idle_in_transaction_session_timeout = "
                       f"{int(IDLE_TRANSACTION_SECONDS * 1000)}")
        cursor.execute(f"SET lock_timeout = {int(LOCK_WAIT_SECONDS * 1000)}")
    finally:
        cursor.close()
    dbapi_conn.commit()       # psycopg opened a transaction for the SETs: end it


def bound_mysql_session(cursor: Any) -> None:
    """Bound a new MariaDB session's idle transactions and lock waits (MySQL has no idle
    transaction timeout: there only lock waits are bounded)."""
    cursor.execute(f"SET SESSION innodb_lock_wait_timeout = {int(LOCK_WAIT_SECONDS)}")
    cursor.execute("SHOW VARIABLES LIKE 'idle_transaction_timeout'")
    if cursor.fetchone() is not None:
        cursor.execute(f"SET SESSION idle_transaction_timeout = {int(IDLE_TRANSACTION_SECONDS)}")


def explain(orig: BaseException | None) -> str | None:
    """What to tell the user after a driver error that one of these bounds caused, or None."""
    if orig is None:
        return None
    sqlstate = getattr(getattr(orig, "diag", None), "sqlstate", None) or getattr(
        orig, "sqlstate", None)
    code = orig.args[0] if orig.args and isinstance(orig.args[0], int) else None
    text = str(orig)
    if sqlstate == _PG_LOCK_TIMEOUT or code == _MY_LOCK_TIMEOUT:
        return (f"waited {LOCK_WAIT_SECONDS:g} s for a lock another process holds, inside its "
                f"transaction: run the command again; if it waits again, find that process "
                f"(PostgreSQL: pg_stat_activity; MariaDB: SHOW PROCESSLIST)")
    if sqlstate == _PG_IDLE_TIMEOUT or "idle-in-transaction" in text:
        return (f"the database ended this process's transaction, which stood idle over "
                f"{IDLE_TRANSACTION_SECONDS:g} s (was the process paused?): nothing of it "
                f"was written; run the command again")
    if code in _MY_GONE:
        return (f"the database closed the connection: a transaction that stood idle over "
                f"{IDLE_TRANSACTION_SECONDS:g} s (was the process paused?) is rolled back, "
                f"or the server went away; run the command again (it reads what was "
                f"written)")
    return None
