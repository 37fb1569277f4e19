"""What every command shares: the config, the database and the cloud name, made on demand."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property

import click
from sqlalchemy import Engine

from consolidator.config import Config, load_config
from consolidator.store.db import check_migrated, make_engine


@dataclass
class AppContext:
    """The global options, and the config and engine they lead to."""

    config_file: str | None = None
    db_url: str | None = None
    cloud: str | None = None
    verbose: int = 0
    _engine: Engine | None = field(default=None, repr=False)

    @cached_property
    def config(self) -> Config:
        """The validated config (defaults when no file is given or present)."""
        return load_config(self.config_file, required=self.config_file is not None)

    @property
    def database_url(self) -> str | None:
        """--db-url, else [database] url, else None (the SQLite default)."""
        return self.db_url or self.config.get("database", "url") or None

    def engine(self, *, migrated: bool = True) -> Engine:
        """The database engine; by default it must be at the current schema revision."""
        if self._engine is None:
            self._engine = make_engine(self.database_url, create=not migrated)
        if migrated:
            check_migrated(self._engine)
        return self._engine

    @property
    def cloud_name(self) -> str | None:
        """--cloud / OS_CLOUD, else [cloud] name, else None."""
        return self.cloud or self.config.get("cloud", "name") or os.environ.get("OS_CLOUD")


pass_app = click.make_pass_decorator(AppContext)
