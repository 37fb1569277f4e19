"""Metric totals kept in the database: counters added to when their event happens (a run
ends, a live migration is journaled done, a notification is dropped, a lease is lost), never
recounted from rows that 'db prune' deletes, so that they only go up; and the few gauges
every daemon of an HA pair must export alike (the last cycle's time)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone

from sqlalchemy import Connection, Engine, select

from consolidator.store.db import translate_errors
from consolidator.store.tables import metric_totals

Labels = tuple[tuple[str, str], ...]


def label_text(labels: Mapping[str, str]) -> str:
    """The stored form of a label set: 'k=v,k=v', sorted by key ('' for none)."""
    return ",".join(f"{key}={labels[key]}" for key in sorted(labels))


def parse_labels(text: str) -> Labels:
    """The label pairs of a stored label text, sorted by key."""
    if not text:
        return ()
    return tuple(sorted(tuple(pair.split("=", 1)) for pair in text.split(",")))  # type: ignore[misc]


def add_on(conn: Connection, name: str, labels: Mapping[str, str], amount: float = 1.0) -> None:
    """Add amount to a total inside the caller's transaction (created at amount)."""
    _upsert(conn, name, labels, amount, add=True)


def set_on(conn: Connection, name: str, labels: Mapping[str, str], value: float) -> None:
    """Set a stored gauge inside the caller's transaction."""
    _upsert(conn, name, labels, value, add=False)


def add(engine: Engine, name: str, labels: Mapping[str, str] | None = None,
        amount: float = 1.0) -> None:
    """Add amount to a total in a transaction of its own."""
    with translate_errors(engine), engine.begin() as conn:
        add_on(conn, name, labels or {}, amount)


def set_value(engine: Engine, name: str, value: float,
              labels: Mapping[str, str] | None = None) -> None:
    """Set a stored gauge in a transaction of its own."""
    with translate_errors(engine), engine.begin() as conn:
        set_on(conn, name, labels or {}, value)


def read_all(engine: Engine) -> dict[tuple[str, Labels], float]:
    """Every stored total: (name, label pairs) -> value."""
    with translate_errors(engine), engine.connect() as conn:
        return {(str(name), parse_labels(str(labels))): float(value) for name, labels, value
                in conn.execute(select(metric_totals.c.name, metric_totals.c.labels,
                                       metric_totals.c.value))}


def _upsert(conn: Connection, name: str, labels: Mapping[str, str], value: float, *,
            add: bool) -> None:
    """One statement, safe against a concurrent first insert: INSERT ... ON CONFLICT (ON
    DUPLICATE KEY UPDATE on MariaDB and MySQL)."""
    now = datetime.now(timezone.utc)
    if conn.dialect.name in ("mysql", "mariadb"):
        from sqlalchemy.dialects.mysql import insert as mysql_insert

        upsert = mysql_insert(metric_totals).values(name=name, labels=label_text(labels),
                                                    value=value, updated_at=now)
        total = metric_totals.c.value + upsert.inserted.value if add else upsert.inserted.value
        conn.execute(upsert.on_duplicate_key_update(value=total, updated_at=now))
        return
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert  # type: ignore[assignment]
    statement = insert(metric_totals).values(name=name, labels=label_text(labels), value=value,
                                             updated_at=now)
    new = metric_totals.c.value + statement.excluded.value if add else statement.excluded.value
    conn.execute(statement.on_conflict_do_update(
        index_elements=[metric_totals.c.name, metric_totals.c.labels],
        set_={"value": new, "updated_at": now}))
