"""Replacements for two of Nova's test fixtures that do not suit a long-running server."""

from __future__ import annotations

import logging
import warnings
from typing import Any

import fixtures
from sqlalchemy import exc as sqla_exc

NOISY = ("migrate.versioning.api", "alembic", "oslo_db.sqlalchemy", "stevedore",
         "oslo.messaging", "oslo_messaging")


def file_logging(path: str | None, level: int = logging.INFO) -> type[fixtures.Fixture]:
    """A StandardLogging stand-in that logs to a file (Nova's keeps every line in memory)."""

    class FileLogging(fixtures.Fixture):
        """Log Nova's services to a file, or nowhere."""

        def setUp(self) -> None:  # noqa: N802 - fixtures' name
            super().setUp()
            handler: logging.Handler = (logging.FileHandler(path) if path
                                        else logging.NullHandler())
            handler.setFormatter(logging.Formatter(
                "%(asctime)s %(levelname)s [%(name)s] %(message)s"))
            root = logging.getLogger()
            # runs after the handlers are restored (cleanups run last first): Nova's INFO
            # lines while the rest of it shuts down reached stdout with --log-file
            self.addCleanup(root.setLevel, max(root.level, logging.WARNING))
            root.setLevel(level)
            self.useFixture(fixtures.LogHandler(handler, nuke_handlers=True))
            for name in NOISY:
                logging.getLogger(name).setLevel(logging.WARNING)
            self.useFixture(fixtures.MonkeyPatch("oslo_log.log.setup",
                                                 lambda *a, **k: None))

    return FileLogging


class QuietWarnings(fixtures.Fixture):
    """Ignore deprecation warnings, as a production Nova does (Nova's test fixture makes
    SQLAlchemy's into errors, and the live-migration API then answers 500)."""

    def setUp(self) -> None:  # noqa: N802 - fixtures' name
        super().setUp()
        saved: list[Any] = list(warnings.filters)
        for category in (DeprecationWarning, PendingDeprecationWarning,
                         sqla_exc.SADeprecationWarning):
            warnings.simplefilter("ignore", category)
        self.addCleanup(_restore_filters, saved)


def _restore_filters(saved: list[Any]) -> None:
    """Put back the warning filters as they were."""
    warnings.filters[:] = saved  # type: ignore[index]
