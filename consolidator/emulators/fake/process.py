"""Child processes of the fake cloud (and its peers): stopping them for sure."""

from __future__ import annotations

import subprocess


def stop_child(process: subprocess.Popen, timeout: float = 10.0) -> None:
    """SIGTERM a child, and SIGKILL it if it has not exited within timeout seconds."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)
