"""Engines, the default database location, and the schema version check."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, create_engine, event, inspect, select, text
from sqlalchemy.exc import ArgumentError, SQLAlchemyError
from sqlalchemy.pool import NullPool

from consolidator.core.errors import (
    DatabaseUrlError,
    NotFoundError,
    NotMigratedError,
    StoreError,
)
from consolidator.store.sessions import explain, on_postgresql_connect

if TYPE_CHECKING:
    from alembic.config import Config as AlembicConfig

MIGRATIONS = Path(__file__).with_name("migrations")
#: SQLAlchemy's names of MySQL's dialects: mysql:// URLs, and mariadb:// ones.
MYSQL_DIALECTS = ("mysql", "mariadb")


def default_url() -> str:
    """SQLite in the user data directory (XDG_DATA_HOME or ~/.local/share)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"),
                                                           ".local", "share")
    return f"sqlite:///{os.path.join(base, 'consolidator', 'consolidator.db')}"


def redact(url: str) -> str:
    """The URL with any password hidden, for messages."""
    try:
        from sqlalchemy.engine import make_url
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


def make_engine(url: str | None, *, create: bool = True) -> Engine:
    """An engine for url (default: SQLite in the user data directory).

    With create=False a SQLite file that does not exist yet is refused instead of created,
    so that a mistyped URL leaves nothing behind.
    """
    given = url
    url = url or default_url()
    kwargs: dict = {"future": True}
    if url.startswith("sqlite"):
        path = url.split("///", 1)[1] if "///" in url else ""
        if path and path != ":memory:" and given and not Path(path).parent.is_dir():
            raise DatabaseUrlError(f"database {url}: the directory {Path(path).parent} does "
                                   f"not exist: create it, or fix --db-url / [database] url")
        if path and path != ":memory:" and not create and not Path(path).exists():
            raise NotMigratedError(f"database {url} does not exist: "
                                   f"run 'consolidator db upgrade'")
        if path and path != ":memory:":
            try:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the directory of {path}: "
                                 f"{exc.strerror or exc}") from None
        kwargs["connect_args"] = {"timeout": 30}
        kwargs["poolclass"] = NullPool
    elif url.startswith("postgresql") and "+" not in url.split("://", 1)[0]:
        url = url.replace("postgresql", "postgresql+psycopg", 1)
    elif url.split("://", 1)[0] in MYSQL_DIALECTS:
        url = url.replace("://", "+pymysql://", 1)
    if not url.startswith("sqlite"):
        # A server that went away for a moment costs one failed call, not every pooled one.
        kwargs["pool_pre_ping"] = True
    try:
        engine = create_engine(url, **kwargs)
    except ImportError as exc:
        raise DatabaseUrlError(_missing_driver(url, exc)) from None
    except (ArgumentError, ValueError) as exc:
        raise DatabaseUrlError(f"invalid database URL {redact(url)!r}: {exc}") from None
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _sqlite_pragmas)
    elif engine.dialect.name == "postgresql":
        event.listen(engine, "connect", on_postgresql_connect)
    elif engine.dialect.name in MYSQL_DIALECTS:
        from consolidator.store.mysql import on_connect

        event.listen(engine, "connect", on_connect)
    return engine


def _missing_driver(url: str, exc: ImportError) -> str:
    """The one line for a database URL whose driver is not installed."""
    if url.split("://", 1)[0] == "postgresql+psycopg":
        return (f"database {redact(url)}: PostgreSQL needs the psycopg driver, which a plain "
                f"install leaves out: pip install 'consolidator[postgresql]'")
    if url.split("://", 1)[0] in {f"{name}+pymysql" for name in MYSQL_DIALECTS}:
        return (f"database {redact(url)}: MariaDB and MySQL need the PyMySQL driver, which a "
                f"plain install leaves out: pip install 'consolidator[mysql]'")
    return (f"database {redact(url)}: its driver is not installed "
            f"({exc.name or exc}): install it, or fix --db-url / [database] url")


def _sqlite_pragmas(dbapi_conn: object, _record: object) -> None:
    cursor = dbapi_conn.cursor()  # type: ignore[attr-defined]
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _alembic_config(connection: Connection) -> AlembicConfig:
    from alembic.config import Config as AlembicConfig

    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str:
    """The newest schema revision this code knows: the one no revision script names as its
    down_revision (read from the scripts' text, without importing alembic: every command
    that opens the store asks)."""
    revisions, parents = set(), set()
    for script in (MIGRATIONS / "versions").glob("*.py"):
        source = script.read_text(encoding="utf-8")
        revisions.update(re.findall(r"^revision\s*=\s*['\"](\w+)['\"]", source, re.M))
        parents.update(re.findall(r"^down_revision\s*=\s*['\"](\w+)['\"]", source, re.M))
    heads = revisions - parents
    assert len(heads) == 1, heads
    return heads.pop()


@contextmanager
def translate_errors(engine: Engine) -> Iterator[None]:
    """Turn SQLAlchemy errors into StoreError naming the database."""
    try:
        yield
    except SQLAlchemyError as exc:
        orig = getattr(exc, "orig", None)
        detail = explain(orig) or str(orig or exc).strip().splitlines()[0]
        raise StoreError(f"database {redact(str(engine.url))}: {detail}") from None


def resolve_id(engine: Engine, id_column: Any, ref: str, what: str) -> str:
    """The full id in id_column named by an id or a unique prefix of one (snapshots, plans)."""
    with translate_errors(engine), engine.connect() as conn:
        ids = conn.execute(select(id_column).where(id_column.startswith(ref)).limit(2)
                           ).scalars().all()
    if not ref or not ids:
        raise NotFoundError(f"{what} {ref!r} does not exist (see 'consolidator {what}s list')")
    if len(ids) > 1:
        # exit 2, as a missing id: both say the reference names no one object
        raise NotFoundError(f"{what} id {ref!r} is ambiguous: give more characters")
    return ids[0]


def upgrade(engine: Engine, revision: str = "head") -> tuple[str | None, str]:
    """Apply the pending migrations up to revision; return (revision before, revision after)."""
    from alembic import command
    from alembic.runtime.migration import MigrationContext

    with translate_errors(engine), engine.begin() as conn:
        before = MigrationContext.configure(conn).get_current_revision()
        command.upgrade(_alembic_config(conn), revision)
        after = MigrationContext.configure(conn).get_current_revision()
    return before, after or ""


def current_revision(engine: Engine) -> str | None:
    """The schema revision stored in the database, or None (alembic's version table, read
    with one query)."""
    with translate_errors(engine), engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        return conn.execute(text("SELECT version_num FROM alembic_version")).scalar()


def check_migrated(engine: Engine) -> None:
    """Raise NotMigratedError unless the schema is at this code's head revision."""
    current = current_revision(engine)
    head = head_revision()
    if current != head:
        state = "has no schema" if current is None else f"is at revision {current}, not {head}"
        raise NotMigratedError(f"database {redact(str(engine.url))} {state}: "
                               f"run 'consolidator db upgrade'")
