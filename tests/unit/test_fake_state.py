"""The fake cloud's state without HTTP: live migration on simulated time, power, faults."""

from __future__ import annotations

from typing import Any

import pytest

from consolidator.core.errors import ScenarioError
from consolidator.emulators.fake import migration
from consolidator.emulators.fake.cloud import resolve_settings
from consolidator.emulators.fake.faults import Faults, validate_fault
from consolidator.emulators.fake.state import CloudState
from consolidator.scenario.files import parse_scenario


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _doc() -> dict[str, Any]:
    host = {"vcpus": 8, "memory_mb": 16384, "disk_gb": 200}
    return {
        "hosts": [{"name": "c1", **host}, {"name": "c2", **host},
                  {"name": "small", "vcpus": 2, "memory_mb": 2048, "disk_gb": 200},
                  {"name": "off", **host, "power": "off"},
                  {"name": "closed", **host, "status": "disabled",
                   "disabled_reason": "maintenance"}],
        "instances": [
            {"name": "a", "host": "c1", "vcpus": 2, "memory_mb": 4096, "disk_gb": 20,
             "flavor": "m1.medium"},
            {"name": "b", "host": "c2", "vcpus": 2, "memory_mb": 4096, "disk_gb": 20,
             "flavor": "m1.medium"},
            {"name": "c", "host": "c1", "vcpus": 1, "memory_mb": 1024, "disk_gb": 10},
            {"name": "stopped", "host": "c1", "vcpus": 1, "memory_mb": 1024, "disk_gb": 10,
             "status": "SHUTOFF"},
        ],
        "server_groups": [{"name": "web", "policy": "anti-affinity", "members": ["a", "b"]}],
    }


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def state(clock: Clock) -> CloudState:
    return CloudState(parse_scenario(_doc()).cluster, project_id="p", user_id="u",
                      handle_event=migration.handle_event, clock=clock)


def _migrate(state: CloudState, name: str, host: str | None, fault: str | None = None,
             **kwargs: Any) -> migration.MigrationRecord:
    server = state.server(name)
    assert server is not None
    return migration.live_migrate(state, server.id, host, force=False, bandwidth_mb_s=1024.0,
                                  queue_seconds=kwargs.get("queue", 1.0),
                                  fault=lambda s: fault)


def test_a_migration_runs_queued_running_completed_on_simulated_time(
        state: CloudState, clock: Clock) -> None:
    mig = _migrate(state, "c", "c2")       # 1024 MB at 1024 MB/s: 1 s after a 1 s queue
    c1, c2 = state.hosts["c1"], state.hosts["c2"]
    assert (mig.status, state.server("c").status) == ("queued", "MIGRATING")
    clock.now += 1.0
    with state.locked():
        assert mig.status == "running"
        assert c2.used == [3, 5120, 30] and c1.used == [4, 6144, 40]   # claimed on both
        assert mig.uuid in c1.allocations
    clock.now += 1.0
    with state.locked():
        assert mig.status == "completed"
        server = state.server("c")
        assert (server.host, server.status, server.task_state) == ("c2", "ACTIVE", None)
        assert c1.used == [3, 5120, 30] and c2.used == [3, 5120, 30]
        assert server.id in c2.servers and server.id not in c1.servers


@pytest.mark.parametrize(("name", "host", "status", "message"), [
    ("nope", "c2", 404, "could not be found"),
    ("stopped", "c2", 409, "vm_state stopped"),
    ("c", "nowhere", 400, "Compute host nowhere could not be found"),
    ("c", "c1", 400, "to current host"),
])
def test_the_api_rejects_a_migration_at_once(state: CloudState, name: str, host: str,
                                             status: int, message: str) -> None:
    server = state.server(name)
    with pytest.raises(migration.MigrationRejected) as err:
        migration.live_migrate(state, server.id if server else name, host, force=False,
                               bandwidth_mb_s=1.0, queue_seconds=0.0, fault=lambda s: None)
    assert err.value.status == status and message in err.value.message


def test_a_migrating_server_cannot_migrate_again(state: CloudState) -> None:
    _migrate(state, "c", "c2")
    with pytest.raises(migration.MigrationRejected) as err:
        _migrate(state, "c", "c2")
    assert err.value.status == 409 and "task_state migrating" in err.value.message


@pytest.mark.parametrize(("name", "dest", "reason"), [
    ("a", "small", "not enough capacity"),
    ("a", "c2", "anti-affinity"),
    ("c", "off", "unavailable"),
    ("c", "closed", "disabled"),
])
def test_the_conductor_refuses_a_bad_destination_and_the_server_stays(
        state: CloudState, clock: Clock, name: str, dest: str, reason: str) -> None:
    before = [list(h.used) for h in state.hosts.values()]
    mig = _migrate(state, name, dest)
    clock.now += 10
    with state.locked():
        assert mig.status == "error" and reason in (mig.error or "")
        server = state.server(name)
        assert (server.host, server.status) == ("c1", "ACTIVE")
        assert [list(h.used) for h in state.hosts.values()] == before


def test_an_injected_failure_rolls_back_to_the_source(state: CloudState, clock: Clock) -> None:
    mig = _migrate(state, "c", "c2", fault="fails")
    clock.now += 10
    with state.locked():
        assert mig.status == "error"
        assert state.server("c").host == "c1"
        assert state.hosts["c2"].used == [2, 4096, 20]
        assert state.hosts["c1"].used == [4, 6144, 40]


def test_an_injected_hang_runs_for_ever(state: CloudState, clock: Clock) -> None:
    mig = _migrate(state, "c", "c2", fault="hangs")
    clock.now += 1e6
    with state.locked():
        assert mig.status == "running" and state.server("c").status == "MIGRATING"


def test_without_a_host_the_scheduler_picks_a_valid_one(state: CloudState,
                                                        clock: Clock) -> None:
    mig = _migrate(state, "a", None)
    clock.now += 10
    with state.locked():
        # c2 holds b (anti-affinity), small is too small, off and closed are unusable
        assert mig.status == "error"
    mig = _migrate(state, "c", None)
    clock.now += 10
    with state.locked():
        assert (mig.status, mig.dest) == ("completed", "c2")


def test_power_drives_the_compute_service(state: CloudState, clock: Clock) -> None:
    c1 = state.hosts["c1"]
    assert state.service_state(state.hosts["off"], clock.now) == "down"
    state.set_power("c1", False, up_delay=5.0)
    assert state.service_state(c1, clock.now) == "down"
    state.set_power("c1", True, up_delay=5.0)
    assert state.service_state(c1, clock.now + 4.9) == "down"
    assert state.service_state(c1, clock.now + 5.0) == "up"


def test_the_cluster_view_follows_the_live_state(state: CloudState, clock: Clock) -> None:
    _migrate(state, "c", "c2", queue=0.0)
    state.set_power("off", True, up_delay=0.0)
    clock.now += 10
    cluster = state.cluster()
    assert {i.name: i.host for i in cluster.instances}["c"] == "c2"
    off = cluster.hosts[cluster.host_index["off"]]
    assert (off.power, off.state) == ("on", "up")
    closed = cluster.hosts[cluster.host_index["closed"]]
    assert (closed.status, closed.disabled_reason) == ("disabled", "maintenance")


def test_flavors_are_shared_by_name_and_synthesised_without_one(state: CloudState) -> None:
    assert state.server("a").flavor is state.server("b").flavor
    assert state.server("c").flavor.name == "c1-m1024-d10"
    assert state.server("c").flavor is state.server("stopped").flavor


def test_fault_rules_are_validated_and_counted() -> None:
    faults = Faults()
    faults.add({"type": "http_error", "method": "post", "path": "/compute/*/action",
                "status": 409, "count": 1})
    assert faults.http_error("GET", "/compute/v2.1/servers/x/action") is None
    assert faults.http_error("POST", "/compute/v2.1/servers/x/action")["status"] == 409
    assert faults.http_error("POST", "/compute/v2.1/servers/x/action") is None
    faults.add({"type": "migration_hangs", "instance": "vm-1"})
    assert faults.migration_fault("id-1", "vm-1") == "hangs"
    assert faults.migration_fault("id-1", "vm-1") == "hangs"     # no count: unlimited
    assert faults.migration_fault("id-2", "vm-2") is None
    for bad in ({"type": "nope"}, {"type": "slow"}, {"type": "http_error", "path": "*"},
                {"type": "http_error", "path": "*", "status": 200},
                {"type": "migration_fails", "instance": "x", "count": 0},
                {"type": "slow", "seconds": 1, "colour": "red"}):
        with pytest.raises(ScenarioError):
            validate_fault(bad)


def test_settings_explicit_beats_scenario_beats_default() -> None:
    settings = resolve_settings({"password": "s", "max_microversion": "2.60"},
                                {"max_microversion": "2.88"})
    assert settings["password"] == "s" and settings["max_microversion"] == (2, 88)
    assert settings["username"] == "admin"
    with pytest.raises(ScenarioError, match="unknown key"):
        resolve_settings({"colour": 1}, {})
    with pytest.raises(ScenarioError, match="max_microversion"):
        resolve_settings({"max_microversion": "3.0"}, {})
