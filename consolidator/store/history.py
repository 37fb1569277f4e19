"""What the database says has been done, for the metrics: runs of plans by kind and end
state, and the live migrations the journal recorded (any command's, the daemon's or not)."""

from __future__ import annotations

from sqlalchemy import Engine, case, func, select

from consolidator.core.journal_entry import FAILED, SUCCEEDED
from consolidator.store.db import translate_errors
from consolidator.store.tables import journal, plans

#: The plan states a run ends in (or is in).
RUN_STATES = ("running", "succeeded", "failed")


def run_counts(engine: Engine) -> dict[tuple[str, str], int]:
    """(kind, status) -> plans run: kind 'rollback' for rollback plans, else 'plan'."""
    kind = case((plans.c.algorithm == "rollback", "rollback"), else_="plan")
    query = (select(kind, plans.c.status, func.count())
             .where(plans.c.status.in_(RUN_STATES)).group_by(kind, plans.c.status))
    with translate_errors(engine), engine.connect() as conn:
        return {(str(k), str(s)): int(n) for k, s, n in conn.execute(query)}


def migration_results(engine: Engine) -> tuple[dict[str, int], list[float]]:
    """Journaled live migrations by result (succeeded, failed), and the durations in seconds
    of the succeeded ones."""
    query = (select(journal.c.state, journal.c.started_at, journal.c.finished_at)
             .where(journal.c.action == "migrate", journal.c.state.in_((SUCCEEDED, FAILED))))
    counts = {SUCCEEDED: 0, FAILED: 0}
    durations: list[float] = []
    with translate_errors(engine), engine.connect() as conn:
        for state, started, finished in conn.execute(query):
            counts[state] += 1
            if state == SUCCEEDED and started is not None and finished is not None:
                durations.append(max(0.0, (finished - started).total_seconds()))
    return counts, durations
