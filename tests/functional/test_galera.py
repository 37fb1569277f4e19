"""The store on a Galera node (issue 48): a one-node cluster of Debian's MariaDB and Galera,
started by the test. Every session waits for causality (wsrep_sync_wait), and the lease's
compare-and-sets hold there as on one server."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from consolidator.core.errors import StoreError
from consolidator.store import journal
from consolidator.store.db import make_engine, upgrade
from consolidator.store.leases import Guard, LeaseLostError, acquire, release
from consolidator.store.mysql import SYNC_WAIT, check_sync_wait
from tests.functional.waits import PATIENCE_S, stop_process, wait_until

GALERA = Path("/usr/lib/galera/libgalera_smm.so")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def galera_url(tmp_path: Path) -> Iterator[str]:
    """A one-node Galera cluster on 127.0.0.1 with an empty database; stopped afterwards."""
    mariadbd = shutil.which("mariadbd") or "/usr/sbin/mariadbd"
    if not (Path(mariadbd).exists() and shutil.which("mariadb-install-db") and GALERA.exists()):
        why = "Debian's mariadb-server (with galera-4) is not installed"
        if os.environ.get("CI"):
            pytest.fail(f"{why}: CI must run the Galera tests (.ci/run installs it)")
        pytest.skip(f"{why} (apt-get install mariadb-server)")
    data, sock = tmp_path / "galera", tmp_path / "g.sock"
    subprocess.run(["mariadb-install-db", "--user=root", f"--datadir={data}",
                    "--auth-root-authentication-method=normal"], check=True,
                   capture_output=True, timeout=PATIENCE_S)
    port, group = _free_port(), _free_port()
    log = (tmp_path / "galera.log").open("w")
    server = subprocess.Popen(
        [mariadbd, "--user=root", f"--datadir={data}", f"--port={port}", f"--socket={sock}",
         "--bind-address=127.0.0.1", "--skip-log-bin", "--wsrep-on=ON",
         f"--wsrep-provider={GALERA}", "--wsrep-cluster-address=gcomm://",
         "--binlog-format=ROW", "--innodb-autoinc-lock-mode=2",
         "--wsrep-node-address=127.0.0.1",
         f"--wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:{group}"],
        stdout=log, stderr=subprocess.STDOUT)
    url = f"mysql+pymysql://root@127.0.0.1:{port}/consolidator"
    try:
        def ready() -> bool:
            assert server.poll() is None, (tmp_path / "galera.log").read_text()[-2000:]
            done = subprocess.run(["mariadb", f"--socket={sock}", "-uroot", "-e",
                                   "CREATE DATABASE IF NOT EXISTS consolidator"],
                                  capture_output=True)
            return done.returncode == 0
        wait_until(ready, "the Galera node to accept connections", interval=0.2)
        yield url
    finally:
        stop_process(server)
        log.close()


def test_a_galera_session_waits_for_causality_and_the_lease_holds(galera_url: str) -> None:
    engine = make_engine(galera_url)
    upgrade(engine)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT @@wsrep_on")).scalar() == 1
        assert int(conn.execute(text("SELECT @@wsrep_sync_wait")).scalar_one()) & SYNC_WAIT \
            == SYNC_WAIT
        assert conn.execute(text("SELECT @@global.wsrep_sync_wait")).scalar() == 0
    a = acquire(engine, "executor:alto", "holder-a", 60)
    assert a is not None and a.generation == 1
    assert journal.begin(engine, cloud="alto", plan_id=None, action="migrate", target="i-1",
                         guard=a) > 0
    assert acquire(engine, "executor:alto", "holder-b", 60) is None
    release(engine, "executor:alto", "holder-a")
    b = acquire(engine, "executor:alto", "holder-b", 60)
    assert b is not None and b.generation == 2
    with pytest.raises(LeaseLostError, match="generation 1"):
        journal.begin(engine, cloud="alto", plan_id=None, action="power_off", target="c3",
                      guard=Guard(engine, "executor:alto", "holder-a", 1))
    assert [e.target for e in journal.entries(engine)] == ["i-1"]
    engine.dispose()


@pytest.mark.parametrize("value", [0, 1, 3, 6])
def test_a_session_without_causal_reads_and_writes_is_refused(value: int) -> None:
    with pytest.raises(StoreError, match=rf"wsrep_sync_wait={value}: .*wsrep_sync_wait=7"):
        check_sync_wait(value)
    check_sync_wait(value | SYNC_WAIT)
