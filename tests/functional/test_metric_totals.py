"""Issue 34: consolidator_runs_total and consolidator_journal_migrations_total were recounted
from rows at each scrape, so they went down when a run ended (its 'running' series fell) and
when 'db prune' deleted rows, which breaks rate(). Counters are now totals the database
keeps as events happen; what is under way is a gauge."""

from __future__ import annotations

from functools import partial
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from consolidator.app.context import AppContext
from consolidator.app.metrics import stored_stats
from consolidator.store.db import make_engine
from consolidator.store.plans import save_plan, set_status
from consolidator.telemetry.exporter import Metrics
from tests.functional.cli import run
from tests.functional.test_prune import draft, history

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(metrics: Metrics) -> tuple[Samples, set[str]]:
    """The samples of one scrape, and the names of the counter families."""
    samples: Samples = {}
    counters = set()
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        if family.type in ("counter", "histogram"):
            counters.add(family.name)
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples, counters


def assert_counters_did_not_fall(before: Samples, after: Samples, counters: set[str]) -> None:
    for (name, labels), value in before.items():
        if any(name == family + suffix for family in counters
               for suffix in ("_total", "_bucket", "_count", "_sum")):
            assert after.get((name, labels), 0.0) >= value, (name, labels, value, after.get(
                (name, labels)))


def test_counters_do_not_fall_across_a_run_ending_and_a_db_prune(db_url: str,
                                                                 tmp_path: Path) -> None:
    ids = history(db_url)
    ctx = AppContext(db_url=db_url)
    metrics = Metrics(stored=partial(stored_stats, ctx))
    first, counters = scrape(metrics)
    assert first[("consolidator_runs_total", (("kind", "plan"), ("result", "succeeded")))] == 1
    assert first[("consolidator_runs_total",
                  (("kind", "rollback"), ("result", "succeeded")))] == 1
    assert first[("consolidator_journal_migrations_total", (("result", "succeeded"),))] == 1
    assert first[("consolidator_migration_duration_seconds_count", ())] == 1

    engine = make_engine(db_url)
    running = save_plan(engine, draft(), cloud="lab", snapshot_id=ids["new"]).id
    for status in ("approved", "running"):
        set_status(engine, running, status, supersede=False)
    during, _ = scrape(metrics)
    assert during[("consolidator_runs_in_progress", (("kind", "plan"),))] == 1
    assert during[("consolidator_runs_started_total", (("kind", "plan"),))] == 2
    set_status(engine, running, "failed")
    ended, _ = scrape(metrics)
    assert ended[("consolidator_runs_in_progress", (("kind", "plan"),))] == 0
    assert ended[("consolidator_runs_total", (("kind", "plan"), ("result", "failed")))] == 1
    assert_counters_did_not_fall(first, during, counters)
    assert_counters_did_not_fall(during, ended, counters)

    pruned = run("db", "prune", "--keep-days", "30", db_url=db_url)
    assert pruned.code == 0 and "removed" in pruned.out, pruned.err
    assert "1 journal row" in pruned.out      # the migration's row is gone...
    after, _ = scrape(metrics)
    assert_counters_did_not_fall(ended, after, counters)   # ...and still counted
    assert after[("consolidator_journal_migrations_total", (("result", "succeeded"),))] == 1
    assert after[("consolidator_runs_total", (("kind", "plan"), ("result", "succeeded")))] == 1
    engine.dispose()
