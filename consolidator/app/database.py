"""The database schema: create it or migrate it to this version."""

from __future__ import annotations

from consolidator.app.context import AppContext
from consolidator.store.db import redact, upgrade


def upgrade_database(ctx: AppContext) -> tuple[str | None, str, str]:
    """Migrate the schema; (revision before, revision after, the URL without password)."""
    engine = ctx.engine(migrated=False)
    before, after = upgrade(engine)
    return before, after, redact(str(engine.url))
