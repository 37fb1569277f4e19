"""Run the consolidator command as a real subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from tests.functional.waits import COMMAND_TIMEOUT_S


@dataclass
class Result:
    """What a command run returned."""

    code: int
    out: str
    err: str


def run(*args: str, db_url: str | None = None, cwd: Path | None = None,
        env: dict[str, str] | None = None,
        timeout: float = COMMAND_TIMEOUT_S) -> Result:
    """Run `python -m consolidator ARGS` with a clean environment for clouds and config; the
    timeout only bounds a hung command (a loaded machine runs each one many times slower)."""
    full_env = {k: v for k, v in os.environ.items()
                if not k.startswith("OS_") and k != "CONSOLIDATOR_DB_URL"}
    if db_url:
        full_env["CONSOLIDATOR_DB_URL"] = db_url
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "consolidator", *args], capture_output=True,
                          text=True, cwd=cwd, env=full_env, timeout=timeout)
    return Result(proc.returncode, proc.stdout, proc.stderr)
