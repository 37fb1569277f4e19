"""What a read through the API costs the store: readers of /v1/hosts share the database with
the daemon that applies a plan, so a read asks it only what changes (the newest snapshot's
id and the recorded host states), never the schema revision again nor the snapshot's
hosts and instances once read."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from consolidator.app.snapshots import record_snapshot
from tests.functional.api_world import api_world

pytestmark = pytest.mark.filterwarnings("ignore:::openstack.*", "ignore:::keystonemiddleware.*",
                                        "ignore:::oslo_config.*", "ignore:::oslo_policy.*",
                                        "ignore:::webob.*")


def test_a_hosts_read_asks_the_store_only_what_changes(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    with api_world(tmp_path, monkeypatch) as world:
        record_snapshot(world.ctx)
        first = world.call("GET", "/v1/hosts", persona="reader")
        assert first.status_code == 200
        asked: list[str] = []

        def count(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
            asked.append(statement)
        event.listen(world.ctx.engine(), "before_cursor_execute", count)
        for _ in range(3):
            again = world.call("GET", "/v1/hosts", persona="reader")
            assert again.get_json() == first.get_json()
        assert len(asked) == 3 * 2, asked
        assert not [s for s in asked if "alembic_version" in s or "sqlite_master" in s]


def test_readers_arriving_together_read_a_new_snapshot_once(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """Fifty readers start at once on a fresh API: the first read of a snapshot (all its
    hosts and instances) is done by one of them, the others wait for it, not each again."""
    from werkzeug.test import Client

    with api_world(tmp_path, monkeypatch) as world:
        record_snapshot(world.ctx)
        token = world.token("reader")
        asked: list[str] = []

        def count(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
            asked.append(statement)
        event.listen(world.ctx.engine(), "before_cursor_execute", count)
        start = threading.Barrier(6)
        answers: list[int] = []

        def read() -> None:
            client = Client(world.client.application)
            start.wait()
            answers.append(client.get("/v1/hosts", headers={"X-Auth-Token": token}
                                      ).status_code)
        readers = [threading.Thread(target=read) for _ in range(6)]
        for thread in readers:
            thread.start()
        for thread in readers:
            thread.join()
        assert answers == [200] * 6
        assert len([s for s in asked if "FROM snapshot_instances" in s]) == 1, asked
