"""Real Nova shows a live-migrated instance ACTIVE on its destination a moment before the
source compute marks the migration record completed; the executor must wait for the record
(found running the project on the real Nova: every migration 'failed' as 'running')."""

from __future__ import annotations

import time
from typing import Any

from consolidator.core.plan import Move
from consolidator.execution.executor import Executor, ExecutorSettings
from consolidator.openstack.nova import ServerState


class LaggingNova:
    """The instance is on the destination at once; its record says running twice more."""

    def __init__(self, final: str = "completed") -> None:
        self.records = ["running", "running", final]

    def server(self, server_id: str) -> ServerState:
        return ServerState(id=server_id, status="ACTIVE", compute_host="c2", node="c2",
                           task_state=None)

    def latest_migration(self, server_id: str) -> dict[str, Any]:
        status = self.records.pop(0) if len(self.records) > 1 else self.records[0]
        return {"status": status, "created_at": "2026-11-23T00:00:00"}


def awaiting(nova: LaggingNova) -> str | None:
    executor = Executor.__new__(Executor)
    executor.nova = nova  # type: ignore[assignment]
    executor.settings = ExecutorSettings(poll_interval=0.01, migration_timeout=5)
    move = Move(instance_id="i-1", instance_name="vm", source="c1", destination="c2", wave=1)
    return executor._await(move, "c2", time.monotonic())


def test_waits_for_the_record_to_complete() -> None:
    assert awaiting(LaggingNova()) is None


def test_a_record_that_ends_in_error_still_fails() -> None:
    assert awaiting(LaggingNova("error")) == "the migration record is error, not completed"
