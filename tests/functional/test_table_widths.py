"""Every table the CLI prints fits the terminal's width (issue 27: "Tables run 117-230
columns wide"): ids cut to the prefix every command takes, long cells wrapped, the wide
columns only with --long; piped without COLUMNS, nothing is fitted."""

from __future__ import annotations

import json

import pytest

from consolidator.store import journal
from consolidator.store.db import make_engine
from consolidator.store.plans import set_status
from tests.conftest import BUNDLED_SCENARIO
from tests.functional.cli import Result, run

WIDTH = 80


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    """A database with the bundled cloud's snapshot, a budgeted and an auto plan (the
    auto one run: a cycle in the report) and journal rows."""
    db = f"sqlite:///{tmp_path_factory.mktemp('widths') / 'c.db'}"
    assert run("db", "upgrade", db_url=db).code == 0
    auto = json.loads(run("plan", "--scenario", str(BUNDLED_SCENARIO), "-f", "json",
                          db_url=db).out)
    budgeted = json.loads(run("plan", "-a", "hvp", "--snapshot", auto["snapshot_id"],
                              "--max-migrations", "20", "-f", "json", db_url=db).out)
    engine = make_engine(db)
    for status in ("approved", "running", "succeeded"):
        set_status(engine, auto["id"], status)
    for m in auto["migrations"][:3]:
        journal.record(engine, cloud=auto["cloud"], plan_id=auto["id"], action="migrate",
                       target=m["instance_id"], state=journal.SUCCEEDED,
                       params={"instance": m["instance_name"], "source": m["source"],
                               "destination": m["destination"]},
                       result=f"ACTIVE on {m['destination']} after a live migration of "
                              f"12.5 s (migration record completed)")
    journal.record(engine, cloud=auto["cloud"], plan_id=auto["id"], action="power_off",
                   target=auto["power_off"][0], state=journal.SUCCEEDED, result="off")
    engine.dispose()
    return db, {"auto": auto, "budgeted": budgeted}


def narrow(*args: str, db: str) -> Result:
    result = run(*args, db_url=db, env={"COLUMNS": str(WIDTH)})
    assert result.code == 0, result.err
    wide = [line for line in result.out.splitlines() if len(line) > WIDTH]
    assert not wide, f"{' '.join(args)}: lines over {WIDTH}:\n" + "\n".join(wide)
    return result


def header(text: str) -> str:
    """The heading line(s) of the first table: the lines before its rule."""
    lines = text.splitlines()
    rule = next(i for i, line in enumerate(lines) if set(line) <= {"-", " "} and "--" in line)
    return " ".join(lines[:rule])


def test_plans_list_fits_and_keeps_its_key_columns(filled: tuple[str, dict]) -> None:
    db, plans = filled
    text = narrow("plans", "list", db=db).out
    for word in ("ID", "STATUS", "ASKED", "CREATED", "HOSTS", "MIGRATIONS"):
        assert word in header(text), word
    assert plans["auto"]["id"][:8] in text and plans["budgeted"]["id"][:8] in text
    assert "succeeded" in text and "11 -> 5" in text
    assert "--max-migrations" in text   # what was asked is wrapped, not cut
    piped = run("plans", "list", db_url=db).out
    assert plans["auto"]["id"] in piped   # not fitted when piped
    long = run("plans", "list", "--long", db_url=db, env={"COLUMNS": str(WIDTH)}).out
    assert "LOWER" in header(long) and "ALGORITHM" in header(long)   # --long: may be wider


def test_plans_compare_and_plan_show_fit(filled: tuple[str, dict]) -> None:
    db, plans = filled
    text = narrow("plans", "compare", plans["auto"]["id"], plans["budgeted"]["id"], db=db).out
    for word in ("PLAN", "ASKED", "HOSTS", "LOWER", "MIGRATIONS", "GIB", "WATTS"):
        assert word in header(text), word
    assert "hvp --max-migrations 20" in text.replace("\n", " ") or "hvp" in text
    shown = narrow("plan", "show", plans["budgeted"]["id"], db=db).out
    assert "INSTANCES" in shown and "chosen:" in shown and "estimated saving" in shown


def test_snapshots_and_report_fit(filled: tuple[str, dict]) -> None:
    db, plans = filled
    listed = narrow("snapshots", "list", db=db).out
    assert "HOSTS" in header(listed) and "INSTANCES" in header(listed)
    long = run("snapshots", "list", "--long", db_url=db, env={"COLUMNS": str(WIDTH)}).out
    assert "SOURCE" in header(long) and "scenario:/" in long
    shown = narrow("snapshots", "show", plans["auto"]["snapshot_id"], db=db).out
    assert "compute-01" in shown and "POWER" in shown and "VCPU" in shown
    report = narrow("report", db=db).out
    assert plans["auto"]["id"][:8] in report and "Cycles" in report and "POWER" in report
    assert "reduction" in report


def test_journal_and_algorithms_fit(filled: tuple[str, dict]) -> None:
    db, plans = filled
    text = narrow("journal", db=db).out
    for word in ("WHEN", "PLAN", "ACTION", "TARGET", "HOST", "STATE", "RESULT"):
        assert word in header(text), word
    assert "power_off" in text and plans["auto"]["id"][:8] in text
    assert "OPERATOR" in header(run("journal", "--long", db_url=db).out)
    algorithms = narrow("algorithms", db=db).out
    assert "hvp" in algorithms and "WHAT IT DOES" in algorithms
