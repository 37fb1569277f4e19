"""Issue 23: a daemon soak. Many short cycles against a served fake cloud (its own process, so
that only the daemon's memory is measured), with the capacity watch running beside them,
faults injected and the cloud churned between cycles (the clock crossing the padding windows,
an operator disabling hosts, an apply holding the executor lease).

It shows that no cycle is lost without a logged reason, that no instance is lost and no
powered-off host holds one, and that the daemon's memory stops growing: the most it holds over
the last third of the traced cycles is within a small margin of the most over the middle
third.
"""

from __future__ import annotations

import gc
import logging
import random
import threading
import tracemalloc
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from consolidator.app.config import config_from_sections
from consolidator.app.context import AppContext
from consolidator.app.leadership import executor_cloud
from consolidator.daemon import Daemon
from consolidator.openstack.nova import Nova
from consolidator.power.bmc_file import load_bmc_file
from consolidator.power.catalog import driver_for
from consolidator.store.db import make_engine, upgrade
from consolidator.store.leases import acquire, release
from tests.functional.served import ServedCloud, served_cloud
from tests.functional.test_daemon import MORNING, NIGHT, scenario

pytestmark = pytest.mark.slow

CYCLES = 36
#: Cycles before memory is traced: caches (SQLAlchemy's compiled statements, openstacksdk's
#: version discovery) fill up in the first ones.
WARM_UP = 8
#: Bytes the daemon may still add from the middle to the last third of the traced cycles; it
#: held 0.8-1.3 MB, swinging by about 0.2 MB from cycle to cycle, when this was written.
#: Keeping one connection, snapshot or plan per cycle would add more than this.
PLATEAU_BYTES = 300_000


class Lines(logging.Handler):
    """The daemon's log lines of the current cycle, kept only until the next one."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


class DropRecords(logging.Filter):
    """Drops every record at the root's handlers: pytest's capture keeps them all for the
    test's report, and a record of a library's retry (sushy's on a busy BMC) holds its
    exception, whose traceback holds the driver and its HTTP session: memory the daemon
    itself frees."""

    def filter(self, record: logging.LogRecord) -> bool:
        return False


def soak_daemon(served: ServedCloud, tmp: Path, clock: list[datetime]) -> Daemon:
    engine = make_engine(f"sqlite:///{tmp / 'soak.db'}")
    upgrade(engine)
    config = config_from_sections({
        "planner": {"algorithm": "firstfit", "n_plus_one": "false"},
        "daemon": {"auto_apply": "true"},
        "executor": {"poll_interval": "0.02", "power_timeout": "30", "lease_ttl": "30"},
        "padding": {"06:00-18:00": "2", "18:00-06:00": "0"}})
    configs = load_bmc_file(served.bmc_yaml)
    ctx = AppContext.of(config=config, engine=engine, connect=served.connect,
                        power=lambda h: driver_for(configs[h]) if h in configs else None)
    return Daemon(ctx, clock=lambda: clock[0])


def churn(served: ServedCloud, rng: random.Random, k: int) -> str:
    """One fault or change before cycle k; what it was."""
    hosts = [f"c{n}" for n in range(1, 6)]
    choice = k % 6
    if choice == 1:
        server = rng.choice(sorted(served.state()["servers"]))
        served.add_fault({"type": "migration_fails", "instance": server, "count": 1})
        return f"migration of {server} fails"
    if choice == 2:
        served.add_fault({"type": "http_error", "path": "*/os-services", "method": "GET",
                          "status": 503, "count": 1})
        return "one 503 from os-services"
    if choice == 3:
        served.add_fault({"type": "bmc_busy", "host": rng.choice(hosts), "count": 2})
        return "a busy BMC"
    if choice == 4:
        host = rng.choice(hosts)
        Nova(served.connect()).set_service(host, enabled=False, reason="maintenance")
        return f"an operator disabled {host}"
    if choice == 5:
        nova = Nova(served.connect())
        for name, svc in nova.services().items():
            if svc.get("disabled_reason") == "maintenance":
                nova.set_service(name, enabled=True)
        return "an operator enabled the hosts under maintenance"
    return "nothing"


def watch_until(daemon: Daemon, stop: threading.Event) -> None:
    """Run the capacity watch every 0.3 s until stop, keeping none of its answers (a list of
    them would grow with every watch and be counted as the daemon's)."""
    while not stop.wait(0.3):
        daemon.capacity_watch()


def held_memory() -> int:
    """Bytes allocated and still held, outside pytest's and logging's own bookkeeping."""
    gc.collect()
    snap = tracemalloc.take_snapshot().filter_traces([
        tracemalloc.Filter(False, "*/_pytest/*"), tracemalloc.Filter(False, "*/logging/*"),
        tracemalloc.Filter(False, tracemalloc.__file__)])
    return sum(stat.size for stat in snap.statistics("filename"))


def test_many_cycles_lose_nothing_and_memory_plateaus(tmp_path: Path) -> None:
    doc = {**scenario(), "settings": {"migration_bandwidth_mb_s": 1e6,
                                      "service_up_delay_s": 0.05,
                                      "bmc_graceful_delay_s": 0.05}}
    rng = random.Random(23)
    clock = [datetime.fromisoformat(NIGHT)]
    lines = Lines()
    logger = logging.getLogger("consolidator")
    logger.addHandler(lines)
    logger.propagate, level = False, logger.level
    logger.setLevel(logging.INFO)
    dropped = DropRecords()
    for handler in logging.getLogger().handlers:     # pytest's: it keeps every record
        handler.addFilter(dropped)
    stop = threading.Event()
    memory: list[int] = []
    outcomes: list[tuple[str, str]] = []     # what was churned, why the cycle did not run
    try:
        with served_cloud(doc, tmp_path) as served:
            daemon = soak_daemon(served, tmp_path, clock)
            lease = f"executor:{executor_cloud(daemon.ctx)}"
            watch = threading.Thread(target=watch_until, args=(daemon, stop))
            watch.start()
            for k in range(CYCLES):
                if k == WARM_UP:
                    tracemalloc.start()
                clock[0] = datetime.fromisoformat(NIGHT if (k // 4) % 2 == 0 else MORNING)
                served.clear_faults()
                what = churn(served, rng, k)
                apply_running = k % 7 == 6
                if apply_running:
                    assert acquire(daemon.ctx.engine(), lease, "elsewhere:1:apply",
                                   60) is not None
                lines.lines.clear()
                result = daemon.cycle()     # kept for this cycle only: the test holds none
                if apply_running:
                    release(daemon.ctx.engine(), lease, "elsewhere:1:apply")
                    assert "apply or a rollback is running" in result.skipped
                why = result.skipped or result.failed
                outcomes.append((what, why))
                if why:        # never lost without a line saying why
                    assert any(why in line for line in lines.lines), (k, what, why)
                else:
                    assert any("cycle done" in line for line in lines.lines), (k, what)
                assert_safe(served)
                if k >= WARM_UP:
                    memory.append(held_memory())
            stop.set()
            watch.join(timeout=60)
    finally:
        stop.set()
        tracemalloc.stop()
        logger.removeHandler(lines)
        logger.propagate = True
        logger.setLevel(level)
        for handler in logging.getLogger().handlers:
            handler.removeFilter(dropped)
    ran = [what for what, why in outcomes if not why]
    assert len(ran) >= CYCLES - CYCLES // 7 - 3, outcomes
    third = len(memory) // 3
    growth = max(memory[2 * third:]) - max(memory[third:2 * third])
    print(f"held memory over the last {len(memory)} cycles: {memory}; growth {growth}")
    assert growth < PLATEAU_BYTES, (growth, memory)


def assert_safe(served: ServedCloud) -> None:
    """No instance lost; no powered-off host holds one."""
    state: dict[str, Any] = served.state()
    assert len(state["servers"]) == 10
    for name, host in state["hosts"].items():
        if host["power"] == "off":
            assert not [s for s in state["servers"].values() if s["host"] == name], name
