"""The live hosts: service, power (asked of each BMC where one is configured) and use.

A listing reads every BMC at once, each given LIST_TIMEOUT_S in all: a BMC that does not
answer by then shows ``unknown`` (with why in POWER ERROR), and the listing does not wait
for it (it took 24 s with unreachable BMCs, read one after another).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from consolidator.app.context import AppContext, host_driver
from consolidator.app.snapshots import read_cloud
from consolidator.core.errors import ConsolidatorError
from consolidator.store.host_states import all_recorded

#: Seconds a listing waits for all the BMCs' power states.
LIST_TIMEOUT_S = 5.0
#: BMCs read at once.
MAX_AT_ONCE = 32


def read_all(calls: dict[str, Callable[[], str]],
             timeout: float = LIST_TIMEOUT_S) -> dict[str, tuple[str, str | None]]:
    """name -> (power, why unknown) of every call, all at once (MAX_AT_ONCE running), for at
    most `timeout` seconds in all. The reads run in daemon threads, so one that hangs past
    the deadline neither holds the answer nor keeps the process from exiting."""
    results: dict[str, tuple[str, str | None]] = {}
    lock, slots = threading.Lock(), threading.Semaphore(MAX_AT_ONCE)

    def run(name: str, call: Callable[[], str]) -> None:
        with slots:
            try:
                found: tuple[str, str | None] = (call(), None)
            except ConsolidatorError as exc:
                found = ("unknown", str(exc))
            with lock:
                results[name] = found

    threads = [threading.Thread(target=run, args=item, daemon=True) for item in calls.items()]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    with lock:
        return {name: results.get(name, ("unknown", f"no answer in {timeout:g} s"))
                for name in calls}


def host_rows(ctx: AppContext) -> list[dict[str, Any]]:
    """One row per live host: service, power (asked of its BMC where configured), use, and
    the state consolidator recorded for it (core/host_gate.py STATES; None: never recorded)."""
    inventory = read_cloud(ctx)
    cluster = inventory.cluster
    recorded = all_recorded(ctx.engine(), inventory.key,
                            legacy=inventory.cloud)
    lookup = ctx.power_lookup()
    drivers = {h.name: d for h in cluster.hosts for d in [host_driver(lookup, h)] if d}
    states = read_all({name: d.power_state for name, d in drivers.items()})
    rows = []
    for h, host in enumerate(cluster.hosts):
        power, why = states.get(host.name, (f"{host.power} (no BMC)", None))
        cap, used = cluster.capacity[h], cluster.usage[h]
        state = recorded.get(host.name)
        rows.append({"host": host.name, "service": f"{host.status}/{host.state}",
                     "state": state.state if state else None,
                     "state_since": state.since.isoformat() if state else None,
                     "state_why": state.why if state else None,
                     "disabled_reason": host.disabled_reason, "power": power,
                     "power_error": why,
                     "instances": int(cluster.population[h]),
                     "vcpu": [float(used[0]), float(cap[0])],
                     "memory_mb": [float(used[1]), float(cap[1])]})
    return rows
