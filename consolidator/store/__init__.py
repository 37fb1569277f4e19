"""The database: tables, migrations and repository functions."""
