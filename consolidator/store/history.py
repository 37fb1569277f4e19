"""What the database says is under way, for the metrics: the plans running now, by kind
(what has been done is counted as it happens, in store/totals.py)."""

from __future__ import annotations

from sqlalchemy import Engine, case, func, select

from consolidator.store.db import translate_errors
from consolidator.store.tables import plans


def runs_in_progress(engine: Engine) -> dict[str, int]:
    """kind -> plans running now: kind 'rollback' for rollback plans, else 'plan'."""
    kind = case((plans.c.algorithm == "rollback", "rollback"), else_="plan")
    query = (select(kind, func.count()).where(plans.c.status == "running").group_by(kind))
    with translate_errors(engine), engine.connect() as conn:
        return {str(k): int(n) for k, n in conn.execute(query)}
