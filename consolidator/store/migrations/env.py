"""Alembic environment: runs on the connection handed over by consolidator.store.db."""

from alembic import context

from consolidator.store.tables import metadata

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through 'consolidator db upgrade'")
context.configure(connection=connection, target_metadata=metadata,
                  render_as_batch=connection.dialect.name == "sqlite")
with context.begin_transaction():
    context.run_migrations()
