"""A cache of parsed YAML scenario files, keyed by their content, as JSON.

Parsing YAML costs about 0.15 s per megabyte even when built straight from libyaml's events
(consolidator.scenario.yaml_loader); JSON loads the same document three to four times faster. A
file is parsed once per content: its SHA-256 names the cached JSON. Set CONSOLIDATOR_CACHE_DIR
to move the cache, or to an empty string to turn it off. Any cache error is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

#: Bumped when what the YAML loader produces changes.
VERSION = "1"


def cache_dir() -> Path | None:
    """Where parsed scenarios go, or None when the cache is off."""
    configured = os.environ.get("CONSOLIDATOR_CACHE_DIR")
    if configured is not None:
        return Path(configured) if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "consolidator" / "scenarios"


def _path(text: str) -> Path | None:
    where = cache_dir()
    if where is None:
        return None
    digest = hashlib.sha256(f"{VERSION}\0{text}".encode()).hexdigest()
    return where / f"{digest}.json"


def cached(text: str) -> Any | None:
    """The parsed document of this YAML text, if cached."""
    path = _path(text)
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path is not None else None
    except (OSError, ValueError):
        return None


def store(text: str, doc: Any) -> None:
    """Cache a parsed document, if JSON gives it back unchanged (no dates, no odd keys)."""
    path = _path(text)
    if path is None:
        return
    try:
        dumped = json.dumps(doc)
        if json.loads(dumped) != doc:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False,
                                         encoding="utf-8") as f:
            f.write(dumped)
        os.replace(f.name, path)
    except (OSError, TypeError, ValueError):
        return
