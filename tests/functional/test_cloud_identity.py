"""Issue 45, item 1: leases and recorded host states are keyed by the cloud's identity (its
Keystone URL and region), not by the clouds.yaml entry's name. With the 'fake' entry copied as
'fake2', '--cloud fake apply PLAN --yes' and, while it shut c4 down, '--cloud fake2 hosts power
on c4' each took a lease of their own (both at generation 1): the second answered 0 and
enabled c4 while it was going down."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from sqlalchemy import select

from consolidator.core import host_gate as hg
from consolidator.store import host_states, journal
from consolidator.store.db import make_engine
from consolidator.store.tables import host_states as host_states_table
from consolidator.store.tables import leases
from tests.functional.served import served_cloud
from tests.functional.test_apply_cli import Operator, operator_for, scenario
from tests.functional.waits import PATIENCE_S, stop_process, wait_until


@pytest.fixture
def op(tmp_path: Path) -> Iterator[Operator]:
    doc = scenario(bandwidth=1e6)
    doc["settings"]["bmc_graceful_delay_s"] = 8.0
    with served_cloud(doc, tmp_path) as served:
        clouds = yaml.safe_load(served.clouds_yaml.read_text())
        clouds["clouds"]["fake2"] = dict(clouds["clouds"]["fake"])   # one cloud, two names
        served.clouds_yaml.write_text(yaml.safe_dump(clouds))
        yield operator_for(served, tmp_path)


def as_fake2(op: Operator, *args: str):  # noqa: ANN201 - a Result
    from tests.functional.cli import run

    env = {"OS_CLIENT_CONFIG_FILE": str(op.served.clouds_yaml),
           "CONSOLIDATOR_BMC_FILE": str(op.served.bmc_yaml)}
    return run("--config", str(op.config), "--cloud", "fake2", *args, db_url=op.db_url,
               env=env)


def test_a_second_name_for_the_cloud_cannot_power_on_a_host_it_shuts_down(op: Operator
                                                                         ) -> None:
    plan = op.plan()
    going = plan["power_off"][0]
    engine = make_engine(op.db_url)
    seen: list[tuple[str, str]] = []
    stop = threading.Event()

    def sample() -> None:       # c4's power and service, every 50 ms
        while not stop.wait(0.05):
            host = op.served.state()["hosts"][going]
            seen.append((host["power"], host["status"]))
    sampler = threading.Thread(target=sample, daemon=True)
    apply = op.popen("apply", plan["id"], "--yes")
    try:
        sampler.start()
        wait_until(lambda: any(e.action == "power_off" and e.target == going
                               for e in journal.entries(engine, plan_id=plan["id"])),
                   f"the power-off of {going}")
        second = as_fake2(op, "hosts", "power", "on", going)
        assert second.code == 1, second.out + second.err
        assert "already running" in second.err, second.err
        out, err = apply.communicate(timeout=PATIENCE_S)
        assert apply.returncode == 0, out + err
    finally:
        stop.set()
        sampler.join(timeout=10)
        if apply.poll() is None:
            stop_process(apply)
    assert ("off", "enabled") not in seen and ("on", "enabled") not in seen[-5:], seen[-5:]
    state = op.served.state()["hosts"][going]
    assert (state["power"], state["status"]) == ("off", "disabled")
    holders = {(e.lease_holder, e.lease_generation) for e in journal.entries(engine)
               if e.lease_holder}
    assert len({h for h, _ in holders}) == 1, holders
    # one set of host states, which the second name reads: its power-on brings c4 back
    back = as_fake2(op, "hosts", "power", "on", going)
    assert back.code == 0, back.err
    with engine.connect() as conn:
        clouds = {r.cloud for r in conn.execute(select(host_states_table))}
        names = {r.name for r in conn.execute(select(leases))}
    assert len(clouds) == 1 and "127.0.0.1" in next(iter(clouds)), clouds
    assert {"executor:fake", "executor:fake2"} <= names
    assert host_states.recorded(engine, next(iter(clouds)), going).state == hg.IN_SERVICE


def test_states_recorded_under_a_name_by_an_older_release_are_still_read(op: Operator
                                                                         ) -> None:
    """Rows an older release keyed by the clouds.yaml name: they are read through that name
    while the identity has none, and moved under the identity at their next change, where
    every name of the cloud reads them."""
    engine = make_engine(op.db_url)
    host_states.change(engine, "fake", "c4", hg.OFF, actor=hg.APPLY, why="recorded by 0.1")

    def state_of(cli, host: str) -> str | None:  # noqa: ANN001 - op or as_fake2
        shown = cli("hosts", "list", "--format", "json")
        assert shown.code == 0, shown.err
        return next(r for r in json.loads(shown.out) if r["host"] == host)["state"]
    assert state_of(op, "c4") == hg.OFF
    on = op("hosts", "power", "on", "c4")
    assert on.code == 0, on.err
    assert state_of(lambda *a: as_fake2(op, *a), "c4") == hg.IN_SERVICE
    with engine.connect() as conn:
        rows = {(r.cloud, r.host): r.state for r in conn.execute(select(host_states_table))}
    assert ("fake", "c4") not in rows, rows
    assert [s for (_c, h), s in rows.items() if h == "c4"] == [hg.IN_SERVICE], rows


def test_two_names_for_the_cloud_elect_one_daemon(op: Operator,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """The daemon's leadership lease was 'daemon:<name>': a daemon under 'fake' and one
    under 'fake2' both led the same cloud. Under its identity, only one leads; the other
    leads once the first resigns."""
    from consolidator.app.context import AppContext
    from consolidator.daemon import Daemon

    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(op.served.clouds_yaml))
    monkeypatch.setenv("CONSOLIDATOR_BMC_FILE", str(op.served.bmc_yaml))
    first, second = (Daemon(AppContext(config_file=str(op.config), db_url=op.db_url,
                                       cloud=name)) for name in ("fake", "fake2"))
    assert first.lead()
    assert not second.lead()
    assert first.lead()                 # renewing stays possible
    engine = make_engine(op.db_url)
    with engine.connect() as conn:
        held = {row.name: row.holder for row in conn.execute(select(leases))}
    assert not any(holder == second.holder for holder in held.values()), held
    first.resign()
    assert second.lead()
    assert not first.lead()
    second.resign()


def test_a_second_name_for_the_cloud_rolls_back_what_the_first_did(op: Operator) -> None:
    """Which hosts consolidator took out of service is read from the journal: rows written
    under 'fake' were not seen by a rollback under 'fake2', which then left the hosts that
    'fake' powered off disabled and off (not ours under that name). Journal rows carry the
    cloud's identity, and every name of the cloud reads them."""
    before = op.where()
    plan = op.plan()
    assert plan["power_off"], plan
    applied = op("apply", plan["id"], "--yes")
    assert applied.code == 0, applied.err
    assert all(op.where()[f"power:{h}"] == "off" for h in plan["power_off"])
    back = as_fake2(op, "rollback", plan["snapshot_id"], "--yes")
    assert back.code == 0, back.out + back.err
    assert op.where() == before
    hosts = op.served.state()["hosts"]
    assert all(hosts[h]["status"] == "enabled" for h in plan["power_off"]), hosts
