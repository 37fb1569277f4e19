"""Holding the executor lease for as long as an actor works: taken once, renewed every third
of its TTL by a thread, released at the end. A renewal that fails in any way (another holder,
a database error) counts as losing it: the guard is revoked, so every later guarded journal
write fails and no destructive call follows. Every actor that changes the cloud (a plan's
run, an operator's 'hosts power on|off') holds the lease through this one keeper, for the
whole of what it does, however long a BMC's graceful shutdown takes.

The lease is keyed by the cloud's identity (its Keystone URL and region: gate.cloud_key), so
that any number of clouds.yaml names for one cloud share it; the lease under the name the
actor was given is held with it, so that a process of an older release (which knows only the
name) and anything that looks a lease up by name see it too."""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import TracebackType

from sqlalchemy import Engine

from consolidator.core.errors import ConsolidatorError
from consolidator.store import totals
from consolidator.store.leases import Guard, acquire_all_or_raise, make_holder, release


def executor_leases(cloud: str, key: str | None = None) -> list[str]:
    """The lease names of a cloud's executor: ``executor:<identity>`` (shared by every
    clouds.yaml name of the cloud), then ``executor:<name>``."""
    return list(dict.fromkeys([f"executor:{key or cloud}", f"executor:{cloud}"]))


class LeaseKeeper:
    """The leases ``executor:<identity>`` and ``executor:<name>`` held by this process while
    the block runs (one when the identity is not known)."""

    def __init__(self, engine: Engine, cloud: str, ttl: float, *, key: str | None = None,
                 on_lost: Callable[[str], None] = lambda _why: None,
                 report: Callable[[str], None] = lambda _line: None) -> None:
        self.engine, self.cloud, self.ttl = engine, cloud, ttl
        self.names = executor_leases(cloud, key)
        self.name = self.names[0]
        self.holder = make_holder()
        self.on_lost, self.report = on_lost, report
        self.guard: Guard | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> Guard:
        """Take the lease (LeaseHeldError naming its holder) and start renewing it."""
        self.guard = acquire_all_or_raise(self.engine, self.names, self.holder, self.ttl,
                                          f"an executor for cloud {self.cloud!r}")
        self._thread = threading.Thread(target=self._renew, args=(self.guard,), daemon=True,
                                        name=f"lease-{self.cloud}")
        self._thread.start()
        return self.guard

    def _renew(self, guard: Guard) -> None:
        while not self._stop.wait(self.ttl / 3):
            try:
                held = guard.renew(self.ttl)
                why = "another process holds it now"
            except Exception as exc:  # noqa: BLE001 - whatever failed, the lease is not held
                held, why = False, f"renewing it failed: {exc}"
            if not held:
                self.on_lost(why)
                guard.revoke(why)
                return

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 trace: TracebackType | None) -> None:
        """Stop renewing and give the lease up (it expires on its own if that fails)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.guard is not None and self.guard.lost:    # the alert 'a lease lost'
            try:
                totals.add(self.engine, "leases_lost_total", {"lease": "executor"})
            except ConsolidatorError as error:
                self.report(f"could not count the lost executor lease: {error}")
        for name in self.names:
            try:
                release(self.engine, name, self.holder)
            except ConsolidatorError as error:
                self.report(f"could not release the executor lease {name!r}: {error}")
