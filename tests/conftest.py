"""Shared fixtures: the bundled scenario, and databases on SQLite and PostgreSQL."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from consolidator.store.db import make_engine, upgrade

ROOT = Path(__file__).resolve().parent.parent
BUNDLED_SCENARIO = ROOT / "etc" / "consolidator" / "scenarios" / "alto-cloud.yaml"
PG_ENV = "CONSOLIDATOR_TEST_PG_URL"
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


def _pg_url() -> str:
    url = os.environ.get(PG_ENV)
    if not url:
        if os.environ.get("CI"):
            pytest.fail(f"{PG_ENV} is not set: CI must run the store tests on PostgreSQL")
        pytest.skip(f"{PG_ENV} is not set (CI sets it; see .ci/run)")
    return url


@pytest.fixture
def pg_database() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test; dropped afterwards."""
    url = make_url(_pg_url()).set(drivername="postgresql+psycopg")
    name = f"consolidator_test_{uuid.uuid4().hex[:12]}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield url.set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of an empty database, once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'consolidator.db'}"
    return request.getfixturevalue("pg_database")


def migrated(url: str) -> str:
    """Bring the database at url to the current schema; return url."""
    engine = make_engine(url)
    upgrade(engine)
    engine.dispose()
    return url


@pytest.fixture
def db_url(empty_db_url: str) -> str:
    """A migrated database on SQLite and PostgreSQL."""
    return migrated(empty_db_url)
