"""consolidator db ...: schema migrations."""

from __future__ import annotations

import click

from consolidator.app.context import AppContext
from consolidator.app.database import prune_database, upgrade_database
from consolidator.cli.context import pass_app
from consolidator.core.wording import plural


@click.group("db")
def db_group() -> None:
    """Manage the database: its schema and its history."""


@db_group.command("upgrade")
@pass_app
def db_upgrade(app: AppContext) -> None:
    """Create the schema, or migrate it to this version's revision."""
    before, after, where = upgrade_database(app)
    if before == after:
        click.echo(f"database {where} is up to date (revision {after})")
    else:
        click.echo(f"database {where} upgraded from {before or 'empty'} to revision {after}")


@db_group.command("prune")
@click.option("--keep-days", type=click.IntRange(min=1), metavar="N",
              help="Keep the last N days [default: [database] keep_days].")
@click.option("--dry-run", is_flag=True, help="Only say what would be removed.")
@pass_app
def db_prune(app: AppContext, keep_days: int | None, dry_run: bool) -> None:
    """Remove snapshots, plans and journal rows older than N days that no live plan or
    rollback still needs (the newest snapshot of each cloud, live plans and what rollback
    reads of the journal are always kept)."""
    pruned, days = prune_database(app, keep_days, dry_run=dry_run)
    verb = "would remove" if dry_run else "removed"
    click.echo(f"{verb} {plural(pruned.snapshots, 'snapshot')}, "
               f"{plural(pruned.plans, 'plan')} and {plural(pruned.journal, 'journal row')} "
               f"older than {plural(days, 'day')}")
