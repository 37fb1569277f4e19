"""What one journal row says: an action, its target, and how it ended."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

RUNNING, SUCCEEDED, FAILED, SKIPPED = "running", "succeeded", "failed", "skipped"


@dataclass(frozen=True)
class Entry:
    """One journal row."""

    id: int
    cloud: str
    plan_id: str | None
    action: str
    target: str
    params: dict[str, Any]
    state: str
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    result: str | None
    lease_holder: str | None = None
    lease_generation: int | None = None
