"""Where log records go: ours at the asked level, the libraries' only from -v up."""

from __future__ import annotations

import logging
import sys
import warnings
from typing import TextIO

#: Loggers of the libraries under consolidator. Below -v their warnings never reach the
#: terminal: whatever fails there reaches the operator as consolidator's own one-line error.
LIBRARIES = ("keystoneauth", "keystoneauth1", "openstack", "os_service_types", "stevedore",
             "sushy", "urllib3", "requests", "pyghmi", "alembic")

#: Python warnings (warnings.warn) these modules raise, e.g. urllib3's InsecureRequestWarning.
_WARNING_MODULES = r"(urllib3|requests|sushy|keystoneauth1|openstack|pyghmi)(\..*)?$"

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def configure_logging(verbose: int, stream: TextIO | None = None) -> None:
    """-v info, -vv debug (libraries included); without -v, warnings of consolidator only."""
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    root = logging.getLogger()
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(logging.Formatter(FORMAT))
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.captureWarnings(True)
    library_level = (logging.CRITICAL if verbose == 0 else
                     logging.WARNING if verbose == 1 else logging.DEBUG)
    for name in LIBRARIES:
        logging.getLogger(name).setLevel(library_level)
    if verbose == 0:
        warnings.filterwarnings("ignore", module=_WARNING_MODULES)
