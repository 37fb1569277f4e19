"""The project's own exception types; the CLI turns each into one line and an exit code."""

from __future__ import annotations


class ConsolidatorError(Exception):
    """Base of every error shown to the user as one line; exit code 1."""

    exit_code = 1


class UsageError(ConsolidatorError):
    """The command line asked for something that does not exist; exit code 2."""

    exit_code = 2


class ConfigError(ConsolidatorError):
    """The INI config file is missing, malformed or holds an invalid value."""

    @classmethod
    def not_utf8(cls, path: object, exc: UnicodeDecodeError) -> ConfigError:
        """One line naming the file, the first bad byte and the fix."""
        return cls(f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
                   f"{exc.start}): save it as UTF-8")


class ModelError(ConsolidatorError):
    """A cluster that is not self-consistent (unknown host, negative size, duplicate)."""


class ScenarioError(ConsolidatorError):
    """A scenario file that cannot be read, parsed or validated."""


class StoreError(ConsolidatorError):
    """The database cannot be reached or used."""


class NotMigratedError(StoreError):
    """The database schema is missing or older than this code."""


class NotFoundError(ConsolidatorError):
    """A stored object (snapshot, plan) that does not exist."""


class CloudError(ConsolidatorError):
    """The OpenStack cloud cannot be reached or answered with an error."""
