"""python -m consolidator.emulators.realnova OPTIONS_JSON: serve the real Nova in the foreground."""

# Nova's test package monkey-patches the process with eventlet: it must come first, after
# silencing what that prints to stderr about eventlet's deprecation (a warning and two log
# lines that nothing here can act on; logging and warnings are loaded already).
import logging  # noqa: I001
import warnings

warnings.filterwarnings("ignore", message=r"\s*Eventlet is deprecated")
logging.getLogger("nova.monkey_patch").setLevel(logging.ERROR)

import nova.tests  # noqa: F401, E402, I001

import sys  # noqa: E402

from consolidator.emulators.realnova.options import ServeOptions  # noqa: E402
from consolidator.emulators.realnova.serve import run  # noqa: E402


def _echo(line: str) -> None:
    print(line, flush=True)


if __name__ == "__main__":
    sys.exit(run(ServeOptions.from_json(sys.argv[1]), _echo))
