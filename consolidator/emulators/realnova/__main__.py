"""python -m consolidator.emulators.realnova OPTIONS_JSON: serve the real Nova in the foreground."""

# Nova's test package monkey-patches the process with eventlet: it must come first.
import nova.tests  # noqa: F401, I001

import sys

from consolidator.emulators.realnova.options import ServeOptions
from consolidator.emulators.realnova.serve import run


def _echo(line: str) -> None:
    print(line, flush=True)


if __name__ == "__main__":
    sys.exit(run(ServeOptions.from_json(sys.argv[1]), _echo))
