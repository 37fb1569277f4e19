"""consolidator db ...: schema migrations."""

from __future__ import annotations

import click

from consolidator.app.context import AppContext
from consolidator.app.database import upgrade_database
from consolidator.cli.context import pass_app


@click.group("db")
def db_group() -> None:
    """Manage the database schema."""


@db_group.command("upgrade")
@pass_app
def db_upgrade(app: AppContext) -> None:
    """Create the schema, or migrate it to this version's revision."""
    before, after, where = upgrade_database(app)
    if before == after:
        click.echo(f"database {where} is up to date (revision {after})")
    else:
        click.echo(f"database {where} upgraded from {before or 'empty'} to revision {after}")
