"""psycopg is the [postgresql] extra, not a hard dependency (issue 34): a PostgreSQL URL
without it is one line naming the extra, not a traceback or a driver's own words."""

from __future__ import annotations

import sys

import pytest

from consolidator.cli import main
from consolidator.core.errors import StoreError
from consolidator.store.db import make_engine

URL = "postgresql://consolidator:secret@127.0.0.1:9/consolidator"


@pytest.fixture
def no_psycopg(monkeypatch: pytest.MonkeyPatch) -> None:
    """An install without the extra: importing psycopg fails as it would there."""
    for name in [n for n in sys.modules if n == "psycopg" or n.startswith("psycopg.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "psycopg", None)


def test_a_postgresql_url_without_psycopg_names_the_extra(no_psycopg: None) -> None:
    with pytest.raises(StoreError) as caught:
        make_engine(URL)
    message = str(caught.value)
    assert "pip install 'consolidator[postgresql]'" in message
    assert "secret" not in message and "\n" not in message


def test_the_cli_says_it_in_one_line_with_exit_code_1(
        no_psycopg: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db-url", URL, "db", "upgrade"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("consolidator: error: ") and "[postgresql]" in err


def test_sqlite_needs_no_extra(no_psycopg: None, tmp_path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}")
    assert engine.dialect.name == "sqlite"
