"""The database drivers are extras, not hard dependencies: psycopg is [postgresql] (issue 34),
PyMySQL is [mysql] (issue 48). A URL whose driver is missing is one line naming the extra,
not a traceback or a driver's own words."""

from __future__ import annotations

import sys

import pytest

from consolidator.cli import main
from consolidator.core.errors import StoreError
from consolidator.store.db import make_engine

#: (the driver's module, a URL that needs it, its extra)
CASES = [("psycopg", "postgresql://consolidator:secret@127.0.0.1:9/consolidator", "postgresql"),
         ("pymysql", "mysql://consolidator:secret@127.0.0.1:9/consolidator", "mysql"),
         ("pymysql", "mysql+pymysql://consolidator:secret@127.0.0.1:9/consolidator", "mysql"),
         ("pymysql", "mariadb://consolidator:secret@127.0.0.1:9/consolidator", "mysql")]


def without(monkeypatch: pytest.MonkeyPatch, module: str) -> None:
    """An install without the extra: importing its driver fails as it would there."""
    for name in [n for n in sys.modules if n == module or n.startswith(f"{module}.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, module, None)


@pytest.mark.parametrize("module, url, extra", CASES)
def test_a_url_without_its_driver_names_the_extra(monkeypatch: pytest.MonkeyPatch,
                                                  module: str, url: str, extra: str) -> None:
    without(monkeypatch, module)
    with pytest.raises(StoreError) as caught:
        make_engine(url)
    message = str(caught.value)
    assert f"pip install 'consolidator[{extra}]'" in message
    assert "secret" not in message and "\n" not in message


@pytest.mark.parametrize("module, url, extra", CASES[:2])
def test_the_cli_says_it_in_one_line_with_exit_code_2(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], module: str,
        url: str, extra: str) -> None:
    without(monkeypatch, module)
    assert main(["--db-url", url, "db", "upgrade"]) == 2     # a missing extra, as README says
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("consolidator: error: ") and f"[{extra}]" in err


def test_sqlite_needs_no_extra(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    without(monkeypatch, "psycopg")
    without(monkeypatch, "pymysql")
    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}")
    assert engine.dialect.name == "sqlite"


@pytest.mark.parametrize("url, dialect", [(CASES[1][1], "mysql"), (CASES[3][1], "mariadb")])
def test_a_mysql_url_without_a_driver_gets_pymysql(url: str, dialect: str) -> None:
    engine = make_engine(url)
    assert engine.dialect.name == dialect and engine.dialect.driver == "pymysql"
