"""python -m consolidator.emulators.realkeystone --workdir DIR [--port N]
[--token-expiration S] [--api-url URL]: serve the real Keystone in the foreground."""

import sys
import warnings

from consolidator.emulators.realkeystone.serve import parse_args, run

warnings.filterwarnings("ignore", message=r"\s*Eventlet is deprecated")


def _echo(line: str) -> None:
    print(line, flush=True)


if __name__ == "__main__":
    args = parse_args(sys.argv[1:])
    del sys.argv[1:]          # oslo.config parses sys.argv when Keystone configures itself
    sys.exit(run(args, _echo))
