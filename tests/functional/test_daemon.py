"""The daemon's cycles against the fake cloud with Redfish BMCs, under a controlled clock;
and high availability with two real daemon processes on PostgreSQL."""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import datetime
from functools import partial
from pathlib import Path

import pytest
import time_machine
import yaml

from consolidator.app.config import config_from_sections
from consolidator.app.context import AppContext
from consolidator.app.metrics import stored_stats
from consolidator.daemon import Daemon
from consolidator.emulators.fake.cloud import FakeCloud
from consolidator.power.bmc_file import load_bmc_file
from consolidator.power.catalog import driver_for
from consolidator.scenario.files import parse_scenario
from consolidator.store.db import make_engine, upgrade
from consolidator.store.leases import current
from consolidator.store.plans import load_plan
from consolidator.store.snapshots import load_snapshot
from tests.functional.waits import PATIENCE_S, stop_process, wait_until

NIGHT = "2026-11-22 02:00:00+01:00"
MORNING = "2026-11-22 07:00:00+01:00"


def scenario() -> dict:
    """Five 16-vCPU hosts with two 2-vCPU instances each: all fit on two hosts."""
    hosts = [{"name": f"c{n}", "vcpus": 16, "memory_mb": 65536, "disk_gb": 1000,
              "bmc": {"driver": "redfish"}} for n in range(1, 6)]
    instances = [{"name": f"vm-{h}-{k}", "host": f"c{h}", "vcpus": 3, "memory_mb": 4096,
                  "disk_gb": 20} for h in range(1, 6) for k in range(2)]
    return {"hosts": hosts, "instances": instances}


def make_daemon(cloud: FakeCloud, engine: object, tmp: Path, *,
                telemetry: dict[str, str] | None = None,
                executor: dict[str, str] | None = None,
                planner: dict[str, str] | None = None,
                relief: dict[str, str] | None = None, **daemon: str) -> Daemon:
    config = config_from_sections({
        "planner": {"algorithm": "firstfit", "n_plus_one": "false", **(planner or {})},
        "daemon": {"auto_apply": "true", **daemon},
        "executor": {"poll_interval": "0.02", "power_timeout": "30", **(executor or {})},
        "telemetry": telemetry or {}, "relief": relief or {},
        "padding": {"06:00-18:00": "2", "18:00-06:00": "0"}})
    bmc = cloud.write_bmc_yaml(tmp / "bmc.yaml")
    configs = load_bmc_file(bmc)
    ctx = AppContext.of(config=config, engine=engine, connect=cloud.connect,
                        power=lambda h: driver_for(configs[h]) if h in configs else None)
    return Daemon(ctx, clock=lambda: datetime.now().astimezone())


@pytest.fixture
def bed(tmp_path: Path) -> Iterator[tuple[FakeCloud, object]]:
    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}")
    upgrade(engine)
    with FakeCloud(parse_scenario(scenario()), bmc=True, migration_bandwidth_mb_s=1e6,
                   service_up_delay_s=0.05, bmc_graceful_delay_s=0.05) as cloud:
        yield cloud, engine


def powered(cloud: FakeCloud) -> set[str]:
    return {h.name for h in cloud.cluster().hosts if cloud.power(h.name) == "on"}


def test_padding_follows_the_clock(bed: tuple, tmp_path: Path) -> None:
    cloud, engine = bed
    daemon = make_daemon(cloud, engine, tmp_path)
    with time_machine.travel(MORNING, tick=False):
        assert daemon.target() == 2
    with time_machine.travel(NIGHT, tick=False):
        assert daemon.target() == 0


def test_second_cycle_on_an_unchanged_cloud_moves_nothing(bed: tuple, tmp_path: Path) -> None:
    cloud, engine = bed
    daemon = make_daemon(cloud, engine, tmp_path)
    with time_machine.travel(NIGHT, tick=True):
        first = daemon.cycle()
        second = daemon.cycle()
    assert first.outcome is not None and first.outcome.ok
    assert first.migrations_planned > 0 and len(powered(cloud)) == 2
    assert second.migrations_planned == 0
    assert second.outcome is None and len(powered(cloud)) == 2
    assert len(cloud.cluster().instances) == 10


def test_the_daemon_keeps_the_configured_migration_budget(bed: tuple, tmp_path: Path) -> None:
    from consolidator.store.plans import load_plan

    cloud, engine = bed
    daemon = make_daemon(cloud, engine, tmp_path,
                         planner={"algorithm": "auto", "max_migrations": "4"})
    with time_machine.travel(NIGHT, tick=True):
        first = daemon.cycle()
    assert 0 < first.migrations_planned <= 4          # unbudgeted, it plans 6
    plan = load_plan(engine, first.plan_id)
    assert plan.draft.choice["asked"] == "auto"
    assert plan.draft.choice["budget"]["max_migrations"] == 4
    assert len(powered(cloud)) == 5 - len(plan.draft.power_off) >= 3


def test_morning_ramp_powers_hosts_on_through_the_bmcs(bed: tuple, tmp_path: Path) -> None:
    cloud, engine = bed
    daemon = make_daemon(cloud, engine, tmp_path)
    with time_machine.travel(NIGHT, tick=True):
        daemon.cycle()
    assert len(powered(cloud)) == 2
    with time_machine.travel(MORNING, tick=True):
        morning = daemon.cycle()
    assert len(morning.powered_on) == 2 and len(powered(cloud)) == 4
    services = {s.host: s for s in cloud.connect().compute.services()}
    for host in morning.powered_on:
        assert services[host].state == "up" and services[host].status == "enabled"
    assert morning.hosts["spare"] == 2


def test_capacity_watch_powers_on_when_free_capacity_is_low(bed: tuple, tmp_path: Path) -> None:
    cloud, engine = bed
    daemon = make_daemon(cloud, engine, tmp_path)
    with time_machine.travel(NIGHT, tick=True):
        daemon.cycle()
        assert daemon.capacity_watch() == []        # padding 0 at night: nothing to do
    with time_machine.travel(MORNING, tick=True):
        # Two powered hosts of 16 vCPUs hold 30 vCPUs: 2 free, far below 2 hosts' worth.
        started = daemon.capacity_watch()
    assert len(started) >= 1
    assert set(started) <= powered(cloud)


def test_two_daemons_fail_over_on_a_database_server(server_db_url: str,
                                                    tmp_path: Path) -> None:
    config = tmp_path / "c.conf"
    config.write_text("[daemon]\nschedule = 0 0 1 1 *\nlease_ttl = 3\n"
                      "capacity_watch_interval = 0\n")
    env = {**os.environ, "CONSOLIDATOR_DB_URL": server_db_url, "OS_CLOUD": "nowhere",
           "OS_CLIENT_CONFIG_FILE": str(tmp_path / "none.yaml")}
    logs = [tmp_path / f"daemon-{i}.err" for i in range(2)]
    procs = [subprocess.Popen([sys.executable, "-m", "consolidator", "--config", str(config),
                               "daemon"], env=env, stdout=subprocess.DEVNULL,
                              stderr=log.open("w"), text=True) for log in logs]
    engine = make_engine(server_db_url)

    def holder_of(log: Path) -> str | None:
        """The random lease holder token a daemon logs when it starts."""
        found = re.search(r"daemon (\S+) started", log.read_text())
        return found.group(1) if found else None
    try:
        def started() -> tuple | None:
            lease = current(engine, "daemon:nowhere")
            holders = [holder_of(log) for log in logs]
            return (lease, holders) if lease is not None and None not in holders else None

        lease, holders = wait_until(started, "a daemon to take the lease", interval=0.2)
        active = procs[holders.index(lease.holder)]
        standby = next(p for p in procs if p is not active)
        standby_holder = holders[procs.index(standby)]
        active.send_signal(signal.SIGKILL)
        active.wait(timeout=PATIENCE_S)
        wait_until(lambda: getattr(current(engine, "daemon:nowhere"), "holder", None) ==
                   standby_holder, "the standby to take over", interval=0.2)
        standby.send_signal(signal.SIGTERM)
        standby.wait(timeout=PATIENCE_S)
        err = logs[procs.index(standby)].read_text()
        assert standby.returncode == 0, err
        assert "is now the active daemon" in err and "stopped" in err
        assert current(engine, "daemon:nowhere") is None      # released on shutdown
    finally:
        for p in procs:
            stop_process(p)


def test_no_work_after_the_shutdown_takes_the_lease_back(bed: tuple, tmp_path: Path) -> None:
    """Found by CI: a heartbeat or a capacity watch that the scheduler started just before
    SIGTERM ran after the daemon had released its lease, and took it again; the stopped
    daemon then held the cloud's lease until it expired, and the standby waited."""
    cloud, engine = bed
    daemon = make_daemon(cloud, engine, tmp_path, capacity_watch_interval="60")
    daemon.heartbeat()
    assert current(engine, daemon.lease) is not None
    daemon.resign()
    daemon.heartbeat()                    # already queued in the scheduler's pool
    daemon.capacity_watch()
    assert current(engine, daemon.lease) is None


def test_daemon_once_from_the_command_line(tmp_path: Path) -> None:
    from tests.functional.cli import run
    from tests.functional.served import served_cloud

    doc = {**scenario(), "settings": {"migration_bandwidth_mb_s": 1e6,
                                      "service_up_delay_s": 0.1, "bmc_graceful_delay_s": 0.05}}
    config = tmp_path / "c.conf"
    config.write_text("[daemon]\nauto_apply = true\n[executor]\npoll_interval = 0.05\n"
                      "[padding]\n00:00-24:00 = 1\n")
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    with served_cloud(doc, tmp_path) as served:
        env = {"OS_CLIENT_CONFIG_FILE": str(served.clouds_yaml),
               "CONSOLIDATOR_BMC_FILE": str(served.bmc_yaml)}
        assert run("db", "upgrade", db_url=db_url).code == 0
        once = run("--config", str(config), "--cloud", served.cloud_name, "daemon", "--once",
                   db_url=db_url, env=env, timeout=180)
        assert once.code == 0, once.out + once.err
        assert "cycle done" in once.out and "applied:" in once.out
        state = served.state()["hosts"]
        assert sum(h["power"] == "on" for h in state.values()) == 3   # 2 busy + 1 spare
        assert yaml.safe_load(served.clouds_yaml.read_text())


def test_a_few_new_instances_plan_only_a_few_migrations(bed: tuple, tmp_path: Path) -> None:
    """As 004's long-term run: after the first packing, later cycles only adjust."""
    from consolidator.core.model import Cluster, Instance
    from consolidator.core.planner import plan_cluster
    from consolidator.store.snapshots import load_snapshot

    cloud, engine = bed
    daemon = make_daemon(cloud, engine, tmp_path)
    with time_machine.travel(MORNING, tick=True):  # both cycles under the same padding
        first = daemon.cycle()
        second = daemon.cycle()
    assert first.outcome is not None and first.outcome.ok
    packed = load_snapshot(engine, second.snapshot_id).cluster
    spare = next(h.name for h in packed.hosts if h.usable and not packed.instances_on(h.name))
    new = tuple(Instance(name=f"new-{k}", host=spare, vcpus=1, memory_mb=1024, disk_gb=10)
                for k in range(3))
    grown = Cluster(hosts=packed.hosts, instances=packed.instances + new,
                    server_groups=packed.server_groups)
    draft = plan_cluster(grown, "firstfit", spare=2)
    assert len(draft.migrations) <= len(new)
    assert {m.instance_name for m in draft.migrations} <= {i.name for i in new}
    assert draft.hosts_after <= len(powered(cloud)) + 1


def test_cycle_metrics(bed: tuple, tmp_path: Path) -> None:
    from consolidator.telemetry.exporter import Metrics

    cloud, engine = bed
    daemon = make_daemon(cloud, engine, tmp_path)
    daemon.metrics = Metrics()
    with time_machine.travel(NIGHT, tick=True):
        result = daemon.cycle()
    text = daemon.metrics.exposition().decode()
    assert 'consolidator_hosts{state="powered_off"} 3.0' in text
    assert 'consolidator_hosts{state="active"} 2.0' in text
    assert 'consolidator_migrations_total{result="succeeded"}' in text
    assert 'consolidator_plans{status="succeeded"} 1.0' in text
    assert "consolidator_leader 1.0" in text
    assert "consolidator_hosts_off_holding_work 0.0" in text
    # the same watts the cycle's plan estimated from the BMC readings, not 3 x 270 W assumed
    plan = load_plan(engine, result.plan_id)
    assert plan.snapshot_id == result.snapshot_id   # planned from the cycle's own snapshot
    saved = next(float(line.split()[1]) for line in text.splitlines()
                 if line.startswith("consolidator_watts_saved "))
    assert saved == pytest.approx(plan.draft.watts_saved) and saved != 3 * 270
    # the cycle's snapshot read the five Redfish BMCs (default 270 W idle, 450 W peak)
    assert "consolidator_power_hosts_measured 5.0" in text
    assert text.count("consolidator_host_power_watts{host=") == 5


def test_a_restarted_daemon_exports_the_last_snapshot_before_its_first_cycle(
        bed: tuple, tmp_path: Path) -> None:
    """A daemon restarted between hourly cycles serves the power and plans the database
    already holds, not 0 W and no plans until its first cycle."""
    from consolidator.telemetry.exporter import Metrics

    cloud, engine = bed
    first = make_daemon(cloud, engine, tmp_path)
    with time_machine.travel(NIGHT, tick=True):
        first.cycle()
    restarted = Daemon(first.ctx, metrics=Metrics(stored=partial(stored_stats, first.ctx)))
    text = restarted.metrics.exposition().decode()
    assert "consolidator_power_hosts_measured 5.0" in text
    assert text.count("consolidator_host_power_watts{host=") == 5
    assert 'consolidator_plans{status="succeeded"} 1.0' in text
    # the hosts and the watts saved too: they were 0 while 3 hosts were off (issue 27)
    assert 'consolidator_hosts{state="powered_off"} 3.0' in text
    assert 'consolidator_hosts{state="active"} 2.0' in text
    saved = next(float(line.split()[1]) for line in text.splitlines()
                 if line.startswith("consolidator_watts_saved "))
    assert saved > 0
    # and the runs the database holds, whoever ran them
    assert 'consolidator_runs_total{kind="plan",result="succeeded"} 1.0' in text
    assert 'consolidator_journal_migrations_total{result="succeeded"} 6.0' in text
    assert 'consolidator_migration_duration_seconds_count 6.0' in text
    assert "consolidator_last_cycle_timestamp_seconds " in text    # the pair agrees on it


def test_daemon_snapshots_carry_the_usage_statistics(tmp_path: Path) -> None:
    """The daemon reads the cloud as 'snapshot' does: with [telemetry], its snapshots hold
    every instance's CPU usage, so capacity_model = ucac has data to work with."""
    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}")
    upgrade(engine)
    doc = scenario()
    for n, inst in enumerate(doc["instances"]):
        inst["usage"] = {"cpu_mean": 0.5 + n % 3, "cpu_std": 0.25}
    with FakeCloud(parse_scenario(doc), bmc=True, migration_bandwidth_mb_s=1e6,
                   service_up_delay_s=0.05, bmc_graceful_delay_s=0.05) as cloud:
        daemon = make_daemon(cloud, engine, tmp_path, auto_apply="false",
                             telemetry={"prometheus_url": cloud.prometheus_url})
        with time_machine.travel(NIGHT, tick=True):
            result = daemon.cycle()
    assert not result.skipped
    snap = load_snapshot(engine, result.snapshot_id)
    usage = {i.name: i.usage for i in snap.cluster.instances}
    assert len(usage) == 10
    assert usage["vm-1-1"] == {"cpu_mean": 1.5, "cpu_std": 0.25}
    assert all(u is not None for u in usage.values())


def test_losing_leadership_cancels_the_running_cycle(tmp_path: Path,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    """Another daemon takes the lease while this one's cycle migrates: the heartbeat cancels
    the cycle, which starts nothing new and ends cancelled, saying why at WARNING, once
    (issue 23: it warned at every heartbeat while the cancelled cycle wound down)."""
    from sqlalchemy import update

    from consolidator.store import journal
    from consolidator.store.tables import leases

    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}")
    upgrade(engine)
    with FakeCloud(parse_scenario(scenario()), bmc=True, migration_bandwidth_mb_s=4096,
                   service_up_delay_s=0.05, bmc_graceful_delay_s=0.05) as cloud:
        daemon = make_daemon(cloud, engine, tmp_path, executor={"max_parallel": "1"})
        results: list = []
        with time_machine.travel(NIGHT, tick=True):
            worker = threading.Thread(target=lambda: results.append(daemon.cycle()))
            worker.start()
            wait_until(lambda: any(e.action == "migrate" for e in journal.entries(engine)),
                       "the cycle to start migrating", interval=0.02)
            with engine.begin() as conn:     # another daemon holds the lease now
                conn.execute(update(leases).where(leases.c.name == daemon.lease).values(
                    holder="other-host:1:other"))
            with caplog.at_level(logging.WARNING, logger="consolidator.daemon"):
                for _ in range(4):   # issue 23: warned once, not at every heartbeat
                    daemon.heartbeat()
                worker.join(timeout=PATIENCE_S)
                daemon.heartbeat()
        assert not worker.is_alive()
        result = results[0]
        assert "lost the daemon lease" in result.skipped
        assert len([r for r in caplog.records if r.levelno == logging.WARNING
                    and "cancelling" in r.getMessage()]) == 1
        assert any(r.levelno == logging.WARNING and "lost the daemon lease" in r.getMessage()
                   for r in caplog.records)
        started = [e for e in journal.entries(engine) if e.state != journal.SKIPPED]
        assert [e.action for e in started] == ["migrate"]
        assert powered(cloud) == {f"c{n}" for n in range(1, 6)}
