"""Issue 45, item 2: a requested shutdown stays pending until its BMC reads off, or until the
operator ends it explicitly; elapsed time alone never ends it, and any time compared across
processes is the database's.

The gate subtracted a 'since' one process wrote with its own clock from another process's
now, and took "still on after power_timeout" for "the shutdown did not happen": a 'hosts
power on' from a process whose clock ran 120 s ahead (or, with no skew at all, one run after
power_timeout while a slow shutdown was still under way) enabled the host at once, and the
shutdown then completed under it.

Each test kills -9 an apply right after it asked the BMC for a graceful shutdown (a
subprocess, tests/functional/lease_actor.py), lets its lease expire, then runs what 'hosts
power on HOST' does from another process, while a sampler watches the fake cloud every
50 ms: no host may ever be off and enabled, or off and holding a server.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml
from sqlalchemy import select

from consolidator.app.config import config_from_sections
from consolidator.app.context import AppContext
from consolidator.app.metrics import stored_stats
from consolidator.core import host_gate as hg
from consolidator.store import host_states, journal
from consolidator.store.tables import host_states as host_states_table
from tests.functional.test_executor import Bed, fake_bed
from tests.functional.test_power_safety import assert_no_work_on_a_powered_off_host
from tests.functional.test_rollback_intent import Rig
from tests.functional.waits import PATIENCE_S, wait_until


class Sampler:
    """The fake cloud's state every 50 ms, checked as it is read, while the block runs."""

    def __init__(self, bed: Bed) -> None:
        self.bed, self.seen, self.bad = bed, 0, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(0.05):
            state = self.bed.cloud.state.summary()
            self.seen += 1
            for name, host in state["hosts"].items():
                if host["power"] == "off" and host["status"] == "enabled":
                    self.bad.append(f"{name} off and enabled")
            try:
                assert_no_work_on_a_powered_off_host(state)
            except AssertionError as exc:
                self.bad.append(f"work on an off host: {exc}")

    @contextmanager
    def watching(self) -> Iterator[Sampler]:
        self._thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            self._thread.join(timeout=10)


def killed_in_its_shutdown(rig: Rig, tmp_path: Path, *, held: bool = False
                           ) -> tuple[str, Path, Path, float]:
    """A new plan's apply (its lease 1 s) killed -9 right after its BMC request for a
    graceful shutdown; once its lease has expired: the host going down, the clouds.yaml and
    bmc.yaml of the other processes, and when the request was seen. held: the shutdowns do
    not complete until the test clears the fake's faults (however slow the machine)."""
    bed = rig
    plan = rig.plan()
    if held:
        for host in plan.draft.power_off:
            bed.cloud.add_fault({"type": "bmc_shutdown_held", "host": host})
    clouds = bed.cloud.write_clouds_yaml(tmp_path / "clouds.yaml")
    bmc = tmp_path / "bmc-actor.yaml"
    doc = yaml.safe_load(bed.cloud.write_bmc_yaml(tmp_path / "bmc0.yaml").read_text())
    doc.setdefault("defaults", {}).update({"timeout": 5})
    bmc.write_text(yaml.safe_dump(doc))
    bmc.chmod(0o600)
    apply = subprocess.Popen(
        [sys.executable, "-m", "tests.functional.lease_actor", "--ttl", "1", "execute",
         f"sqlite:///{tmp_path / 'c.db'}", plan.id, str(clouds), str(bmc)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not bed.cloud.requests("/redfish/v1/Systems/*/Actions/ComputerSystem.Reset",
                                     "POST"):
            assert time.monotonic() < deadline and apply.poll() is None, apply.stderr
            time.sleep(0.02)
        sent = time.monotonic()
        apply.kill()                                        # kill -9 inside the shutdown
        apply.wait(timeout=10)
    finally:
        if apply.poll() is None:
            apply.kill()
    going = next(e.target for e in journal.entries(bed.engine)
                 if e.action == "power_off" and e.state == journal.RUNNING)
    assert bed.cloud.power(going) == "on"                # still shutting down
    time.sleep(1.5)                                      # the dead holder's lease runs out
    return going, clouds, bmc, sent


def power_on_args(tmp_path: Path, host: str, clouds: Path, bmc: Path, *, skew: float = 0.0,
                  power_timeout: float = 30.0, force: bool = False) -> list[str]:
    """'hosts power on HOST' from another process, its clock `skew` seconds ahead."""
    return [sys.executable, "-m", "tests.functional.lease_actor", "--skew", str(skew),
            "power-on", f"sqlite:///{tmp_path / 'c.db'}", host, str(clouds), str(bmc),
            "--power-timeout", str(power_timeout)] + (["--force"] if force else [])


def power_on(tmp_path: Path, host: str, clouds: Path, bmc: Path, **kw: object
             ) -> subprocess.CompletedProcess[str]:
    """Run power_on_args to its end."""
    return subprocess.run(power_on_args(tmp_path, host, clouds, bmc, **kw),  # type: ignore[arg-type]
                          capture_output=True, text=True, timeout=300)


def recorded(bed: Bed, host: str) -> tuple[str, str]:
    """The host's recorded state, and the cloud key it is recorded under."""
    with bed.engine.connect() as conn:
        rows = conn.execute(select(host_states_table).where(
            host_states_table.c.host == host)).all()
    assert len(rows) == 1, rows
    return rows[0].state, rows[0].cloud


def service(bed: Bed, host: str) -> dict:
    return bed.cloud.state.summary()["hosts"][host]


def test_a_power_on_from_a_clock_120_s_ahead_waits_for_the_pending_shutdown(
        tmp_path: Path) -> None:
    with fake_bed(tmp_path, bmc_graceful_delay_s=0.5) as bed:
        rig = Rig(cloud=bed.cloud, engine=bed.engine, tmp=bed.tmp)
        going, clouds, bmc, _sent = killed_in_its_shutdown(rig, tmp_path, held=True)
        with Sampler(bed).watching() as sampler:
            proc = subprocess.Popen(power_on_args(tmp_path, going, clouds, bmc, skew=120.0,
                                                  power_timeout=PATIENCE_S),
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            assert proc.stderr is not None
            first = ""
            while "waiting" not in first:          # it waits for the BMC to read off
                line = proc.stderr.readline()
                assert line, first
                first += line
            assert service(bed, going)["status"] == "disabled"
            bed.cloud.clear_faults()                # the shutdown completes now
            out, err = proc.communicate(timeout=PATIENCE_S)
        done = subprocess.CompletedProcess(proc.args, proc.returncode, out, first + err)
        assert done.returncode == 0, done.stderr
        assert "did not happen" not in done.stderr
        assert sampler.seen > 20 and not sampler.bad, sampler.bad[:3]
        host = service(bed, going)
        assert (host["power"], host["status"]) == ("on", "enabled"), done.stderr
        assert recorded(bed, going)[0] == hg.IN_SERVICE


def test_a_shutdown_longer_than_power_timeout_stays_pending(tmp_path: Path) -> None:
    """No skew: the shutdown (held until the test lets it end) outlasts power_timeout (2 s).
    The power-on waits its time, then refuses: the host stays disabled, gets no work, and a
    warning and a metric ask the operator to act. Once its BMC reads off, a power-on brings
    it back."""
    with fake_bed(tmp_path, bmc_graceful_delay_s=0.5) as bed:
        rig = Rig(cloud=bed.cloud, engine=bed.engine, tmp=bed.tmp)
        going, clouds, bmc, _sent = killed_in_its_shutdown(rig, tmp_path, held=True)
        with Sampler(bed).watching() as sampler:
            refused = power_on(tmp_path, going, clouds, bmc, power_timeout=2.0)
            assert refused.returncode == 1, refused.stdout + refused.stderr
            assert "did not happen" not in refused.stderr
            assert "stays disabled and gets no work" in refused.stderr
            host = service(bed, going)
            assert (host["power"], host["status"]) == ("on", "disabled")
            late = power_on(tmp_path, going, clouds, bmc, power_timeout=2.0)
            assert late.returncode == 1 and "still reads on" in late.stderr, late.stderr
            assert "hosts power on" in late.stderr and "--force" in late.stderr
            ctx = AppContext.of(config=config_from_sections({"executor": {
                "power_timeout": "2"}}), engine=bed.engine, connect=bed.cloud.connect)
            assert stored_stats(ctx).overdue_shutdowns == 1
            bed.cloud.clear_faults()                # the shutdown completes
            wait_until(lambda: service(bed, going)["power"] == "off", "the shutdown's end")
            back = power_on(tmp_path, going, clouds, bmc, power_timeout=30.0)
        assert back.returncode == 0, back.stderr
        assert sampler.seen > 20 and not sampler.bad, sampler.bad[:3]
        host = service(bed, going)
        assert (host["power"], host["status"]) == ("on", "enabled")


def test_the_operator_ends_a_shutdown_that_never_comes_with_power_on_force(
        tmp_path: Path) -> None:
    """A graceful shutdown the host ignores (its BMC reads on for ever): only the operator's
    explicit 'hosts power on HOST --force' ends it, journaled."""
    with fake_bed(tmp_path, bmc_graceful_delay_s=0.5) as bed:
        rig = Rig(cloud=bed.cloud, engine=bed.engine, tmp=bed.tmp)
        going, clouds, bmc, _sent = killed_in_its_shutdown(rig, tmp_path, held=True)
        refused = power_on(tmp_path, going, clouds, bmc, power_timeout=1.0)
        assert refused.returncode == 1 and service(bed, going)["status"] == "disabled"
        forced = power_on(tmp_path, going, clouds, bmc, power_timeout=1.0, force=True)
        assert forced.returncode == 0, forced.stderr
        assert service(bed, going)["status"] == "enabled"
        ended = [c for c in host_states.changes(bed.engine, recorded(bed, going)[1], going)
                 if c.before == hg.POWERING_OFF]
        assert ended and ended[-1].actor == hg.OPERATOR and "--force" in (ended[-1].why or "")
