"""Where log records go: ours at the asked level, the libraries' only from -v up."""

from __future__ import annotations

import logging
import sys
import warnings
from typing import TextIO

#: Loggers of the libraries under consolidator. Below -v their warnings never reach the
#: terminal: whatever fails there reaches the operator as consolidator's own one-line error.
LIBRARIES = ("keystoneauth", "keystoneauth1", "openstack", "os_service_types", "stevedore",
             "sushy", "urllib3", "requests", "pyghmi", "alembic", "oslo_messaging", "kombu",
             "amqp")

#: Python warnings (warnings.warn) these modules raise, e.g. urllib3's InsecureRequestWarning.
_WARNING_MODULES = (r"(urllib3|requests|sushy|keystoneauth1|openstack|pyghmi|oslo_messaging|"
                    r"oslo_service|oslo_utils|eventlet)(\..*)?$")

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: Under systemd journald stamps each line itself: the record's level and logger suffice.
JOURNAL_FORMAT = "%(levelname)s %(name)s: %(message)s"

#: syslog priorities (sd-daemon(3)'s <N> prefixes) of the logging levels.
PRIORITIES = ((logging.CRITICAL, 2), (logging.ERROR, 3), (logging.WARNING, 4),
              (logging.INFO, 6))


class JournalFormatter(logging.Formatter):
    """Each line of a record prefixed with its syslog priority, <3> for an error..., which
    journald reads from a service's stderr: 'journalctl -p warning' then filters."""

    def format(self, record: logging.LogRecord) -> str:
        """The record's lines, each with the <N> of its level."""
        priority = next((p for level, p in PRIORITIES if record.levelno >= level), 7)
        return "\n".join(f"<{priority}>{line}"
                         for line in super().format(record).splitlines() or [""])


def stderr_is_journal(stream: TextIO, environ: dict[str, str] | None = None) -> bool:
    """Whether the stream is the journal stream systemd gave the service ($JOURNAL_STREAM,
    'device:inode' of stderr), and not a pipe or a terminal it was redirected to."""
    import os

    env = os.environ if environ is None else environ
    expected = env.get("JOURNAL_STREAM", "")
    if not expected:
        return False
    try:
        info = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return expected == f"{info.st_dev}:{info.st_ino}"


def configure_logging(verbose: int, stream: TextIO | None = None) -> None:
    """-v info, -vv debug (libraries included); without -v, warnings of consolidator only."""
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    root = logging.getLogger()
    target = stream if stream is not None else sys.stderr
    handler = logging.StreamHandler(target)
    handler.setFormatter(JournalFormatter(JOURNAL_FORMAT) if stderr_is_journal(target)
                         else logging.Formatter(FORMAT))
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.captureWarnings(True)
    library_level = (logging.CRITICAL if verbose == 0 else
                     logging.WARNING if verbose == 1 else logging.DEBUG)
    for name in LIBRARIES:
        logging.getLogger(name).setLevel(library_level)
    if verbose == 0:
        warnings.filterwarnings("ignore", module=_WARNING_MODULES)
