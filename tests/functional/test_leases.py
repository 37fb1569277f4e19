"""Leases that cannot be held twice: the database's clock, generations and guards, on SQLite,
PostgreSQL and MariaDB, with real second processes whose clocks are skewed."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import time_machine
from sqlalchemy.engine import make_url

from consolidator.emulators.fake.cloud import FakeCloud
from consolidator.scenario.files import parse_scenario
from consolidator.store import journal
from consolidator.store.db import make_engine
from consolidator.store.leases import (
    Guard,
    LeaseLostError,
    acquire,
    current,
    release,
)
from tests.functional.waits import PATIENCE_S, wait_until

ROOT = Path(__file__).resolve().parents[2]


def actor(*args: str, timeout: float = PATIENCE_S) -> subprocess.CompletedProcess[str]:
    """Run tests.functional.lease_actor in a new process (its own clock and engine)."""
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    done = subprocess.run([sys.executable, "-m", "tests.functional.lease_actor", *args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.parametrize("holder_skew, taker_skew", [(0, 90), (-90, 0)],
                         ids=["taker-90s-ahead", "holder-90s-behind"])
@pytest.mark.parametrize("name", ["executor:alto", "daemon:alto"])
def test_a_skewed_clock_cannot_take_a_held_lease(server_db_url: str, name: str,
                                                 holder_skew: int, taker_skew: int) -> None:
    """A holds a 60 s lease; B, whose clock differs from A's by 90 s, must not take it."""
    held = actor("--skew", str(holder_skew), "--ttl", "60", "acquire", server_db_url,
                 name, "host-a:1:aaaa")
    assert held.stdout.strip() == "held"
    taken = actor("--skew", str(taker_skew), "--ttl", "60", "acquire", server_db_url,
                  name, "host-b:2:bbbb")
    assert taken.stdout.strip() == "refused"
    again = actor("--skew", str(holder_skew), "--ttl", "60", "acquire", server_db_url,
                  name, "host-a:1:aaaa")
    assert again.stdout.strip() == "held"          # the holder still renews it


def test_generations_guards_and_the_database_clock(db_url: str) -> None:
    """A generation changes only with the holder; a guard whose generation is gone, or whose
    lease expired by the database's clock, writes no journal row."""
    engine = make_engine(db_url)
    name = "executor:alto"
    a = acquire(engine, name, "host-a:1:aaaa", 0.5)
    assert a is not None and a.generation == 1
    renewed = acquire(engine, name, "host-a:1:aaaa", 60)
    assert renewed is not None and renewed.generation == 1
    assert journal.begin(engine, cloud="alto", plan_id=None, action="migrate", target="i-1",
                         guard=a) > 0
    with time_machine.travel(datetime.now(timezone.utc) + timedelta(seconds=90), tick=True):
        assert acquire(engine, name, "host-b:2:bbbb", 60) is None   # B's clock is not used
    assert current(engine, name).generation == 1
    assert a.renew(0.3)
    wait_until(lambda: current(engine, name) is None, "the lease to expire by the database's "
               "clock", interval=0.05)
    with pytest.raises(LeaseLostError):
        journal.begin(engine, cloud="alto", plan_id=None, action="migrate", target="i-2",
                      guard=Guard(engine, name, "host-a:1:aaaa", 1))
    b = acquire(engine, name, "host-b:2:bbbb", 60)
    assert b is not None and b.generation == 2
    assert acquire(engine, name, "host-a:1:aaaa", 60) is None
    assert not a.renew(60)
    with pytest.raises(LeaseLostError, match="generation 1"):
        journal.begin(engine, cloud="alto", plan_id=None, action="power_off", target="c3",
                      guard=Guard(engine, name, "host-a:1:aaaa", 1))
    assert [e.target for e in journal.entries(engine)] == ["i-1"]     # nothing written
    journal.record(engine, cloud="alto", plan_id=None, action="disable", target="c3",
                   state=journal.SUCCEEDED, result="ok", guard=b)
    rows = journal.entries(engine)
    assert [(e.lease_holder, e.lease_generation) for e in rows] == [
        ("host-a:1:aaaa", 1), ("host-b:2:bbbb", 2)]
    release(engine, name, "host-b:2:bbbb")
    assert current(engine, name) is None
    again = acquire(engine, name, "host-b:2:bbbb", 60)
    assert again is not None and again.generation == 3          # released: a new generation
    engine.dispose()


class FlakyProxy:
    """A TCP proxy to the database that can go away for a moment: ``outage(s)`` drops every
    connection through it and refuses new ones for s seconds."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.server = socket.create_server(("127.0.0.1", 0))
        self.port = self.server.getsockname()[1]
        self.down_until = 0.0
        self.lock = threading.Lock()
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            if time.monotonic() < self.down_until:
                client.close()
                continue
            upstream = socket.create_connection(self.target)
            with self.lock:
                self.sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:
            for s in (a, b):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def outage(self, seconds: float) -> None:
        """Drop every connection now and refuse new ones for seconds."""
        self.down_until = time.monotonic() + seconds
        with self.lock:
            dropped, self.sockets = self.sockets, []
        for s in dropped:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()

    def close(self) -> None:
        self.server.close()
        self.outage(0)


DESTRUCTIVE = {"migrate", "disable", "enable", "power_on", "power_off", "force_down", "abort",
               "force_complete"}


def test_a_database_outage_hands_the_run_over_with_no_stale_destructive_call(
        server_db_url: str, tmp_path: Path) -> None:
    """Executor A (through a proxy) loses the database for a moment while it migrates: its
    renewal fails, it makes no further destructive call; executor B, another process, then
    takes the lease (a new generation) and finishes the plan. Every destructive call the
    cloud saw follows a journal row written under the then current lease generation, and
    the process that lost it made none after."""
    from tests.functional.test_executor import Bed, scenario

    url = make_url(server_db_url)
    port = url.port or (5432 if url.get_backend_name() == "postgresql" else 3306)
    proxy = FlakyProxy(url.host or "127.0.0.1", port)
    proxied = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    engine = make_engine(server_db_url)
    procs: list[subprocess.Popen[str]] = []
    try:
        with FakeCloud(parse_scenario(scenario()), bmc=True, migration_bandwidth_mb_s=2048,
                       service_up_delay_s=0.05, bmc_graceful_delay_s=0.05) as cloud:
            plan = Bed(cloud=cloud, engine=engine, tmp=tmp_path).plan()
            clouds = cloud.write_clouds_yaml(tmp_path / "clouds.yaml", "fake")
            bmc = cloud.write_bmc_yaml(tmp_path / "bmc.yaml")
            files = [plan.id, str(clouds), str(bmc)]
            env = {**os.environ,
                   "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}

            def start(*args: str) -> subprocess.Popen[str]:
                proc = subprocess.Popen([sys.executable, "-m", "tests.functional.lease_actor",
                                         "--ttl", "1.5", *args], cwd=ROOT, env=env,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
                procs.append(proc)
                return proc

            a = start("execute", proxied, *files, "--max-parallel", "1")
            deadline = time.monotonic() + 60
            # under way in the cloud: its row's fence, right before the request, has passed
            while not any(e.action == "migrate" and cloud.server_status(e.target) == "MIGRATING"
                          for e in journal.entries(engine)):
                assert time.monotonic() < deadline and a.poll() is None, a.stderr.read()
                time.sleep(0.05)
            proxy.outage(1.2)                         # 2 s migration; renewals every 0.5 s
            b = start("execute", server_db_url, *files, "--resume", "--wait", "30",
                      "--max-parallel", "2")
            out_a, err_a = a.communicate(timeout=120)
            out_b, err_b = b.communicate(timeout=120)
            assert a.returncode == 0, err_a
            assert b.returncode == 0, err_b
            ran_a, ran_b = json.loads(out_a), json.loads(out_b)
            assert ran_a["interrupted"] and "lost the executor lease" in err_a
            assert any("lost the executor lease" in why for why in ran_a["skipped"].values())
            assert len(ran_a["migrated"]) == 1 and not ran_a["powered_off"]
            assert not ran_b["interrupted"], ran_b
            assert sorted(ran_b["powered_off"]) == ["c3", "c4", "c5"]

            rows = [e for e in journal.entries(engine, plan_id=plan.id)
                    if e.action in DESTRUCTIVE and e.state != journal.SKIPPED]
            by_a = [e for e in rows if e.lease_holder == ran_a["holder"]]
            by_b = [e for e in rows if e.lease_holder == ran_b["holder"]]
            assert len(by_a) + len(by_b) == len(rows)       # no row without its lease
            assert [e.action for e in by_a] == ["migrate"]
            gen_a, gen_b = {e.lease_generation for e in by_a}, {e.lease_generation for e in by_b}
            assert len(gen_a) == len(gen_b) == 1 and max(gen_a) < min(gen_b)
            assert max(e.id for e in by_a) < min(e.id for e in by_b)
            # The figure: destructive calls by a process that did not hold the current lease
            # generation when it wrote the row before the call.
            newest, stale = 0, 0
            for e in rows:
                stale += e.lease_generation < newest
                newest = max(newest, e.lease_generation)
            assert stale == 0
            # Every destructive call the cloud saw has its journal row.
            migrations = cloud.requests("/compute/v2.1/servers/*/action", "POST")
            services = cloud.requests("/compute/v2.1/os-services*", "PUT")
            resets = {r["path"] for r in cloud.requests(
                "/redfish/v1/Systems/*/Actions/ComputerSystem.Reset", "POST")}
            assert len(migrations) == sum(e.action == "migrate" for e in rows) == 6
            assert len(services) == sum(e.action in ("disable", "enable", "force_down")
                                        for e in rows) == 6     # disable and fence each host
            assert len(resets) == sum(e.action == "power_off" for e in rows) == 3
            for move in plan.draft.migrations:
                assert cloud.server_host(move.instance_id) == move.destination
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
        proxy.close()
        engine.dispose()


def test_the_last_moment_fence_fails_closed_while_the_database_does_not_answer(
        server_db_url: str) -> None:
    """The fence right before a Nova write (Guard.confirm) cannot reach the database: the
    lease is counted lost (LeaseLostError, and no request), as a renewal that fails is; not
    a database error that the write's caller would take for Nova's."""
    url = make_url(server_db_url)
    port = url.port or (5432 if url.get_backend_name() == "postgresql" else 3306)
    proxy = FlakyProxy(url.host or "127.0.0.1", port)
    proxied = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    engine = make_engine(proxied)
    try:
        guard = acquire(engine, "executor:fence", "holder-a", 60)
        assert guard is not None
        guard.confirm()                     # the database answers: still ours
        proxy.outage(30)
        with pytest.raises(LeaseLostError, match="did not answer"):
            guard.confirm()
        assert guard.lost
    finally:
        proxy.close()
        engine.dispose()
