"""apply --dry-run and rollback --dry-run walk the real run's sequence on a simulated copy of
the live state: they exit 0 exactly when the real run succeeds, with its counts, and store
nothing."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.functional.served import served_cloud
from tests.functional.test_apply_cli import Operator, operator_for, scenario


@pytest.fixture
def op(tmp_path: Path) -> Iterator[Operator]:
    with served_cloud(scenario(bandwidth=1e6), tmp_path) as served:
        yield operator_for(served, tmp_path)


def rows(op: Operator) -> dict[str, object]:
    """Every row count of the store, and each plan's status."""
    path = op.db_url.split("///", 1)[1]
    with sqlite3.connect(path) as db:
        counts: dict[str, object] = {
            t: db.execute(f"SELECT count(*) FROM {t}").fetchone()[0]  # noqa: S608
            for t in ("snapshots", "plans", "plan_migrations", "journal", "leases")}
        counts["statuses"] = sorted(db.execute("SELECT id, status FROM plans").fetchall())
    return counts


def counts(out: str) -> dict[str, int]:
    """The summary table's counts: migrated, powered off, ..."""
    return {m.group(1): int(m.group(2)) for m in
            re.finditer(r"^\s*(migrated|failed|skipped|powered on|powered off|hosts left on)"
                        r"\s+(\d+)\s*$", out, re.M)}


def test_apply_and_rollback_dry_runs_predict_the_real_runs_and_store_nothing(
        op: Operator) -> None:
    snap = op("snapshot").out.strip()
    plan = json.loads(op("plan", "-a", "firstfit", "--format", "json").out)
    before, where = rows(op), op.served.state()
    dry = op("apply", plan["id"], "--dry-run")
    assert dry.code == 0, dry.out + dry.err
    assert rows(op) == before and op.served.state() == where  # nothing changed at all
    predicted = counts(dry.out)
    assert predicted["migrated"] == len(plan["migrations"]) and predicted["powered off"] == 2
    real = op("apply", plan["id"], "--yes")
    assert real.code == 0, real.out + real.err
    assert counts(real.out) == predicted

    before, where = rows(op), op.served.state()
    dry = op("rollback", snap, "--dry-run")
    assert dry.code == 0, dry.out + dry.err
    assert rows(op) == before and op.served.state() == where  # nothing changed at all
    predicted = counts(dry.out)
    assert predicted["powered on"] == 2 and predicted["migrated"] == len(plan["migrations"])
    assert predicted["skipped"] == 0
    real = op("rollback", snap, "--yes")
    assert real.code == 0, real.out + real.err
    assert counts(real.out) == predicted


def test_a_dry_run_fails_where_the_real_run_would(op: Operator) -> None:
    """A destination disabled after planning: the real run skips its moves and leaves their
    sources on, so the dry run must fail too, in one line saying why."""
    assert op("snapshot").code == 0
    plan = json.loads(op("plan", "-a", "firstfit", "--format", "json").out)
    conn = op.served.connect()
    service = next(s for s in conn.compute.get("/os-services", microversion="2.53").json()
                   ["services"] if s["host"] == plan["migrations"][0]["destination"])
    conn.compute.put(f"/os-services/{service['id']}", json={"status": "disabled"},
                     microversion="2.53")
    before = rows(op)
    dry = op("apply", plan["id"], "--dry-run")
    assert dry.code == 1, dry.out + dry.err
    assert rows(op) == before
    error = dry.err.strip().splitlines()[-1]
    assert "dry run" in error and "would not finish" in error
    assert "journal" not in error
    predicted = counts(dry.out)
    assert predicted["skipped"] > 0 and predicted["hosts left on"] > 0
    real = op("apply", plan["id"], "--yes")
    assert real.code == 1
    assert counts(real.out) == predicted


def test_a_dry_run_is_refused_while_another_executor_holds_the_lease(op: Operator) -> None:
    """The real run would be refused by the lease, so the dry run is too (and takes no
    lease itself)."""
    from consolidator.store.db import make_engine
    from consolidator.store.leases import acquire, current, make_holder

    assert op("snapshot").code == 0
    plan = json.loads(op("plan", "-a", "firstfit", "--format", "json").out)
    engine = make_engine(op.db_url)
    holder = make_holder()          # this (live) test process
    assert acquire(engine, f"executor:{op.served.cloud_name}", holder, 300) is not None
    before = rows(op)
    dry = op("apply", plan["id"], "--dry-run")
    assert dry.code != 0
    # apply first states the snapshot's age and drift (issue 27), then the one-line error
    lines = [line for line in dry.err.strip().splitlines() if not line.startswith("snapshot ")]
    assert len(lines) == 1 and "already running" in lines[0] and holder in lines[0]
    assert rows(op) == before
    assert current(engine, f"executor:{op.served.cloud_name}").holder == holder
