"""Shared fixtures: the bundled scenario, and databases on SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import JSON, Engine, MetaData, create_engine, text
from sqlalchemy.engine import URL, make_url

from consolidator.store.db import make_engine, upgrade
from consolidator.store.tables import metadata

ROOT = Path(__file__).resolve().parent.parent
BUNDLED_SCENARIO = ROOT / "etc" / "consolidator" / "scenarios" / "alto-cloud.yaml"
PG_ENV = "CONSOLIDATOR_TEST_PG_URL"
MYSQL_ENV = "CONSOLIDATOR_TEST_MYSQL_URL"
# Parsed scenarios are cached per test session, never in the user's own cache (commands run
# as subprocesses inherit it).
os.environ.setdefault("CONSOLIDATOR_CACHE_DIR", tempfile.mkdtemp(prefix="consolidator-cache-"))
# pytest-xdist's workers set COLUMNS=80 (and LINES); the commands the tests run would then fit
# their tables to 80 columns. A test that wants a width sets COLUMNS in the command's own env.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The modules that serve the real Nova or Keystone or hold a test marked slow run
    first, each kept whole and in its own order: the workers (tools/run-tests: -n 4 --dist
    worksteal) then share the long tests early and finish together, instead of some idling
    while another works through a tail of them."""
    def long(item: pytest.Item) -> bool:
        return not {"realnova", "realkeystone"}.isdisjoint(Path(str(item.fspath)).parts) or \
            item.get_closest_marker("slow") is not None
    slow_modules = {str(item.fspath) for item in items if long(item)}
    items.sort(key=lambda item: str(item.fspath) not in slow_modules)


@pytest.fixture
def bundled_scenario() -> Path:
    """The scenario shaped like paper 004's cloud."""
    return BUNDLED_SCENARIO


def server_url(env: str, server: str) -> str:
    """The URL of the test server named by env; a failure in CI without it, else a skip."""
    url = os.environ.get(env)
    if not url:
        if os.environ.get("CI"):
            pytest.fail(f"{env} is not set: CI must run the store tests on {server}")
        pytest.skip(f"{env} is not set (CI sets it; see .ci/run)")
    return url


def _pg_url() -> str:
    return server_url(PG_ENV, "PostgreSQL")


def _scratch_database(url: URL, create: str, drop: str) -> Iterator[str]:
    """A fresh, empty database on the server at url (the SQL to create and drop it, with
    {name}), for one test; dropped afterwards."""
    name = f"consolidator_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(create.format(name=name)))
    try:
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(drop.format(name=name)))
        admin.dispose()


@pytest.fixture
def pg_database() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test; dropped afterwards."""
    yield from _scratch_database(make_url(_pg_url()).set(drivername="postgresql+psycopg"),
                                 'CREATE DATABASE "{name}"',
                                 'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def mysql_database() -> Iterator[str]:
    """A fresh, empty MariaDB (or MySQL) database for one test; dropped afterwards."""
    url = make_url(server_url(MYSQL_ENV, "MariaDB")).set(drivername="mysql+pymysql")
    yield from _scratch_database(url.set(database=None), "CREATE DATABASE `{name}`",
                                 "DROP DATABASE IF EXISTS `{name}`")


#: The database servers the store tests run on, beside SQLite: the fixture of each.
SERVERS = {"postgresql": "pg_database", "mysql": "mysql_database"}


@pytest.fixture(params=["sqlite", *SERVERS])
def empty_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty database: on SQLite, PostgreSQL and MariaDB, one each."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'consolidator.db'}"
    return request.getfixturevalue(SERVERS[request.param])


@pytest.fixture(params=list(SERVERS))
def server_db_url(request: pytest.FixtureRequest) -> str:
    """A migrated database on a server: PostgreSQL and MariaDB, one each (for tests that
    need two processes on one database, or a server's own behaviour)."""
    return migrated(request.getfixturevalue(SERVERS[request.param]))


def migrated(url: str) -> str:
    """Bring the database at url to the current schema; return url."""
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    return url


@pytest.fixture
def db_url(empty_db_url: str) -> str:
    """A migrated database on SQLite, PostgreSQL and MariaDB."""
    return migrated(empty_db_url)


def reflected(engine: Engine) -> MetaData:
    """The tables as the database holds them now (an older revision's), with JSON columns
    typed as JSON again: MariaDB keeps JSON as LONGTEXT, which reflects as text."""
    old = MetaData()
    old.reflect(engine)
    for table in old.tables.values():
        for column in table.c:
            known = metadata.tables.get(table.name)
            if known is not None and column.name in known.c and \
                    isinstance(known.c[column.name].type, JSON):
                column.type = JSON()
    return old
