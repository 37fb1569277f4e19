"""The project's own exception types; the CLI turns each into one line and an exit code."""

from __future__ import annotations


class ConsolidatorError(Exception):
    """Base of every error shown to the user as one line; exit code 1."""

    exit_code = 1


class UsageError(ConsolidatorError):
    """The command line is wrong for what it names: something that does not exist, options
    that do not go together, or an action the named plan or host cannot take; exit code 2.
    (A sound request whose operation failed, refused by the cloud, a BMC, the database, a
    lease, a file's content or a safety check, is a ConsolidatorError: exit code 1.)"""

    exit_code = 2


class MissingFileError(UsageError):
    """A file the command line names does not exist; exit code 2, as click's own check of
    a path (a file that exists but cannot be used is an operation that failed: 1)."""


class ConfigError(ConsolidatorError):
    """The INI config file is malformed or holds an invalid value."""

    @classmethod
    def not_utf8(cls, path: object, exc: UnicodeDecodeError) -> ConfigError:
        """One line naming the file, the first bad byte and the fix."""
        return cls(not_utf8_text(path, exc))


def not_utf8_text(path: object, exc: UnicodeDecodeError) -> str:
    """The one line every reader gives for a file that is not UTF-8: the file, the first bad
    byte and the fix."""
    return (f"{path}: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
            f"{exc.start}): save it as UTF-8")


class MissingConfigFile(ConfigError, MissingFileError):
    """The config file --config names does not exist; exit code 2."""

    exit_code = 2


class MissingBmcFile(ConfigError, MissingFileError):
    """The BMC file --bmc-file (or CONSOLIDATOR_BMC_FILE) names does not exist; exit code
    2."""

    exit_code = 2


class ModelError(ConsolidatorError):
    """A cluster that is not self-consistent (unknown host, negative size, duplicate)."""


class ScenarioError(ConsolidatorError):
    """A scenario file that cannot be read, parsed or validated."""


class MissingScenarioFile(ScenarioError, MissingFileError):
    """The scenario file named does not exist; exit code 2."""

    exit_code = 2


class TraceFileError(ConsolidatorError):
    """A trace, PlanetLab or host-model file whose content cannot be read or used; exit
    code 1, as any file's content (a missing one is a MissingFileError: 2)."""


class StoreError(ConsolidatorError):
    """The database cannot be reached or used."""


class DatabaseUrlError(StoreError, UsageError):
    """The database URL cannot be used as given: an unknown kind, a driver that is not
    installed (an optional extra), a SQLite file in a folder that does not exist; exit code
    2, as a missing optional extra and a missing file the command line names."""

    exit_code = 2


class NotMigratedError(StoreError):
    """The database schema is missing or older than this code."""


class NotFoundError(ConsolidatorError):
    """A stored object (snapshot, plan) the command line names does not exist; exit code 2:
    the command names the wrong thing."""

    exit_code = 2


class CloudError(ConsolidatorError):
    """The OpenStack cloud cannot be reached or answered with an error."""


class FourEyesError(ConsolidatorError):
    """[review] refuses the step: the plan's maker approving it, or applying a plan nobody
    approved."""
