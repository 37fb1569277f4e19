"""The database schema: create it or migrate it to this version."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from consolidator.app.context import AppContext
from consolidator.app.settings import keep_days
from consolidator.core.errors import UsageError
from consolidator.store.db import redact, upgrade
from consolidator.store.retention import Pruned, prune


def upgrade_database(ctx: AppContext) -> tuple[str | None, str, str]:
    """Migrate the schema; (revision before, revision after, the URL without password)."""
    engine = ctx.engine(migrated=False)
    before, after = upgrade(engine)
    return before, after, redact(str(engine.url))


def prune_database(ctx: AppContext, days: int | None = None, *,
                   dry_run: bool = False) -> tuple[Pruned, int]:
    """Remove (dry_run: count) what is older than `days` (default [database] keep_days) and
    no live plan or rollback needs; (what, the days kept). UsageError when neither says."""
    days = keep_days(ctx.config) if days is None else days
    if days <= 0:
        raise UsageError("no retention: give --keep-days N or set [database] keep_days")
    before = datetime.now(timezone.utc) - timedelta(days=days)
    return prune(ctx.engine(), before, dry_run=dry_run), days


def prune_if_configured(ctx: AppContext) -> Pruned | None:
    """The daemon's prune after a cycle, when [database] keep_days is set."""
    if keep_days(ctx.config) <= 0:
        return None
    return prune_database(ctx)[0]
