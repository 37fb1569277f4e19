"""The re-check between the graceful shutdown request and the forced power-off (issue 14):
work that lands on the host during the grace period keeps it from being forced off."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from consolidator.emulators.fake.cloud import FakeCloud
from consolidator.scenario.files import parse_scenario
from consolidator.store import journal
from consolidator.store.db import make_engine, upgrade
from tests.functional.test_executor import Bed, scenario

#: The BMC's graceful shutdown takes longer than the grace period, but less than two.
GRACE_S, GRACEFUL_DELAY_S = 0.6, 0.9


@pytest.fixture
def slow_bed(tmp_path: Path) -> Iterator[Bed]:
    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}")
    upgrade(engine)
    with FakeCloud(parse_scenario(scenario()), bmc=True, migration_bandwidth_mb_s=1e6,
                   service_up_delay_s=0.05, bmc_graceful_delay_s=GRACEFUL_DELAY_S) as cloud:
        yield Bed(cloud=cloud, engine=engine, tmp=tmp_path)


def build_during_grace(bed: Bed, host: str, name: str, *,
                       hold_shutdown: bool = False) -> threading.Thread:
    """Once the power-off of `host` is journaled (its graceful request follows), a server
    lands on it, as a build the scheduler placed there would. With hold_shutdown, the host's
    graceful shutdown does not finish before the server has landed (a bmc_shutdown_held
    fault, cleared then), however slow the machine."""
    if hold_shutdown:
        bed.cloud.add_fault({"type": "bmc_shutdown_held", "host": host})

    def land() -> None:
        while not any(e.action == "power_off" and e.target == host
                      and e.state == journal.RUNNING for e in journal.entries(bed.engine)):
            threading.Event().wait(0.01)
        state = bed.cloud.state
        with state.locked():
            server = next(s for s in state.servers.values() if s.name == name)
            resources = state.hosts[server.host].release(server.id) or server.resources
            del state.hosts[server.host].servers[server.id]
            state.hosts[host].servers[server.id] = None
            state.hosts[host].allocate(server.id, resources)
            server.host = host
        if hold_shutdown:
            bed.cloud.clear_faults()
    thread = threading.Thread(target=land, daemon=True)
    thread.start()
    return thread


def test_work_arriving_during_the_grace_period_stops_the_forced_power_off(
        slow_bed: Bed) -> None:
    bed = slow_bed
    plan = bed.plan()
    assert "c5" in plan.draft.power_off
    landing = build_during_grace(bed, "c5", "vm-1-0")
    outcome = bed.executor(bmc={"grace": GRACE_S}).run(plan)
    landing.join(timeout=10)
    assert "c5" not in outcome.powered_off
    assert "not forced off" in outcome.left_on["c5"]
    assert "1 server is still on it" in outcome.left_on["c5"]
    # Its graceful shutdown still took it down: it was powered on again and enabled.
    assert bed.cloud.power("c5") == "on"
    assert bed.cloud.server_host(next(i.id for i in bed.cloud.cluster().instances
                                      if i.name == "vm-1-0")) == "c5"
    service = next(s for s in bed.cloud.connect().compute.services() if s.host == "c5")
    assert service.status == "enabled" and not service.is_forced_down
    rows = [(e.action, e.state) for e in journal.entries(bed.engine, plan_id=plan.id)
            if e.target == "c5"]
    assert rows[-3:] == [("power_off", journal.SKIPPED), ("power_on", journal.SUCCEEDED),
                         ("enable", journal.SUCCEEDED)]
    # The other emptied hosts were forced off after their grace, the re-check finding them
    # empty.
    assert sorted(outcome.powered_off) == ["c3", "c4"]
    bed.assert_safe()
