"""The randomized stateful test of issue 33: every actor and fault, interleaved at random.

``SafetyMachine`` is a Hypothesis ``RuleBasedStateMachine`` over a ``World``
(tests/functional/safety_world.py). Each rule is one actor (plan, approve, apply, apply
--resume, rollback, daemon --once, relief, the capacity watch, drain, undrain, hosts power,
the operator, the admin, a user) or one fault (kill -9, SIGSTOP past the lease, BMC delay,
vanish and refusal, slow shutdowns, a database lock, a slow webhook); after every rule the
invariants of safety_invariants.py are checked. ``STATS`` counts steps, examples, faults and
violations for tools/bench/safety_fuzz.py; with ``STOP_ON_VIOLATION`` unset (the bench) a
violation is counted and the run goes on.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from tests.functional.safety_world import HOSTS, START, World

#: Hosts consolidator may plan for (c5 is out of scope, c6 excluded).
WORK_HOSTS = ("c1", "c2", "c3", "c4")
hosts = st.sampled_from(HOSTS)
work_hosts = st.sampled_from(WORK_HOSTS)
servers = st.sampled_from(sorted(START))

#: Counted over a whole run (tools/bench reads them).
STATS: dict[str, Any] = {"steps": 0, "examples": 0, "faults": Counter(),
                         "violations": Counter(), "actions": Counter(), "first": {}}
#: Fail the example at its first violation (the test); False: count and go on (the bench).
CONFIG = {"stop_on_violation": True, "log": None}


class SafetyMachine(RuleBasedStateMachine):
    """Actors and faults on one small fake cloud; the invariants after every step."""

    plans = Bundle("plans")

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="safety-fuzz-"))
        self.world = World(self.tmp / "world", log=CONFIG["log"]).start()
        STATS["examples"] += 1

    def teardown(self) -> None:
        """Stop the world, counting what it did."""
        try:
            self.world.settle()
            self.check(settle=False)
        finally:
            self.world.stop()
            STATS["faults"].update(self.world.faults)
            STATS["actions"].update(self.world.actions)
            shutil.rmtree(self.tmp, ignore_errors=True)

    def check(self, *, settle: bool = False) -> None:
        """The invariants; fail the example (the test) or count (the bench)."""
        found = self.world.observe(settle=settle)
        for violation in found:
            STATS["violations"][violation.invariant] += 1
            STATS["first"].setdefault(violation.invariant, str(violation))
        if found and CONFIG["stop_on_violation"]:
            raise AssertionError("; ".join(str(v) for v in found))

    @invariant()
    def invariants_hold(self) -> None:
        """After every step."""
        self.check()

    def _step(self, name: str) -> None:
        STATS["steps"] += 1
        self.world.say(f"-- step {name}")

    @initialize()
    def started(self) -> None:
        """The world is up (the constructor started it)."""

    # -- actors ------------------------------------------------------------------------

    @rule(target=plans)
    def plan(self) -> str:
        """plan: a consolidation plan from a fresh snapshot (or a marker when refused)."""
        self._step("plan")
        return self.world.plan() or "none"

    @rule(plan=plans)
    def approve(self, plan: str) -> None:
        """plan approve."""
        self._step("approve")
        if plan != "none":
            self.world.approve(plan)

    @rule(plan=plans, resume=st.booleans(), background=st.booleans())
    def apply(self, plan: str, resume: bool, background: bool) -> None:
        """apply PLAN --yes, or apply --resume PLAN: in this process, or as a subprocess
        left running for the signals and the other actors."""
        self._step("apply")
        if plan == "none":
            return
        if not background:
            self.world.apply(plan, resume=resume)
        elif len(self.world.running()) < 2:
            self.world.apply_in_background(plan, resume=resume)

    @rule(background=st.booleans())
    def plan_and_apply(self, background: bool) -> None:
        """plan, then apply it (in this process, or as a subprocess left running)."""
        self._step("plan_and_apply")
        plan = self.world.plan()
        if plan is None:
            return
        if not background:
            self.world.apply(plan)
        elif len(self.world.running()) < 2:
            self.world.apply_in_background(plan)

    @rule(index=st.integers(0, 3), hold=st.none() | work_hosts, resume=st.booleans())
    def rollback(self, index: int, hold: str | None, resume: bool) -> None:
        """rollback --partial to a recorded snapshot; the operator may hold a host while it
        waits at its prompt."""
        self._step("rollback")
        at_prompt = None if hold is None else (
            lambda: self.world.operator_service(hold, enable=False))
        self.world.rollback(index, at_prompt=at_prompt, resume=resume)

    @rule()
    def take_snapshot(self) -> None:
        """snapshot (a new rollback target)."""
        self._step("take_snapshot")
        self.world.snapshot()

    @rule()
    def daemon_once(self) -> None:
        """daemon --once with auto_apply."""
        self._step("daemon_once")
        self.world.daemon_once()

    @rule(overloaded=st.sets(work_hosts, min_size=1))
    def relieve(self, overloaded: set[str]) -> None:
        """Overload some hosts, then plan --relieve and apply it."""
        self._step("relieve")
        for host in sorted(overloaded)[1:]:
            self.world.overload(host)
        self.world.relieve(sorted(overloaded)[0])

    @rule(overloaded=st.sets(work_hosts, min_size=1))
    def capacity_watch(self, overloaded: set[str]) -> None:
        """Overload some hosts, then the capacity watch once."""
        self._step("capacity_watch")
        for host in sorted(overloaded):
            self.world.overload(host)
        self.world.capacity_watch()

    @rule(host=work_hosts, power_off=st.booleans())
    def drain(self, host: str, power_off: bool) -> None:
        """hosts drain HOST [--power-off] --yes."""
        self._step("drain")
        self.world.drain(host, power_off=power_off)

    @rule(index=st.integers(0, 3))
    @precondition(lambda self: bool(self.world.known.drained))
    def undrain(self, index: int) -> None:
        """hosts undrain HOST (one of the drained hosts)."""
        self._step("undrain")
        drained = sorted(self.world.known.drained)
        self.world.undrain(drained[index % len(drained)])

    @rule(action=st.sampled_from(["on", "off"]), host=hosts)
    def hosts_power(self, action: str, host: str) -> None:
        """hosts power on|off HOST."""
        self._step("hosts_power")
        self.world.hosts_power(action, host)

    @rule(host=work_hosts, enable=st.booleans())
    def operator(self, host: str, enable: bool) -> None:
        """The operator disables (holds) or enables a host through os-services."""
        self._step("operator")
        self.world.operator_service(host, enable)

    @rule(server=servers, dest=hosts)
    def admin_migrate(self, server: str, dest: str) -> None:
        """An admin forces a live migration onto an enabled host."""
        self._step("admin_migrate")
        rec = self.world.facts().hosts[dest]
        if rec["power"] == "on" and rec["status"] == "enabled":   # as an admin would
            self.world.admin_migrate(server, dest)

    @rule(host=hosts)
    def create_server(self, host: str) -> None:
        """A user boots a server on a powered, enabled host."""
        self._step("create_server")
        rec = self.world.facts().hosts[host]
        if rec["power"] == "on" and rec["status"] == "enabled":
            self.world.create_server(host)

    @rule(index=st.integers(0, 20))
    def delete_server(self, index: int) -> None:
        """A user deletes one of the servers."""
        self._step("delete_server")
        names = sorted(self.world.known.servers)
        if names:
            self.world.delete_server(names[index % len(names)])

    @rule()
    def settle(self) -> None:
        """Wait until nothing runs (a paused apply is woken); check the settled invariants."""
        self._step("settle")
        self.check(settle=True)

    # -- faults ------------------------------------------------------------------------

    @rule()
    @precondition(lambda self: bool(self.world.running()))
    def kill9(self) -> None:
        """kill -9 the newest background apply."""
        self._step("kill9")
        self.world.kill9()

    @rule()
    @precondition(lambda self: bool(self.world.running()))
    def pause_past_lease(self) -> None:
        """SIGSTOP the newest background apply (woken at a later step or when settling)."""
        self._step("pause_past_lease")
        self.world.pause_past_lease()

    @rule()
    @precondition(lambda self: bool(self.world.stopped))
    def wake(self) -> None:
        """SIGCONT the paused applies."""
        self._step("wake")
        self.world.resume_paused()

    @rule(host=hosts, seconds=st.sampled_from([0.5, 1.5, 3.0]))
    def bmc_delay(self, host: str, seconds: float) -> None:
        """The BMC answers late."""
        self._step("bmc_delay")
        self.world.bmc_delay(host, seconds)

    @rule(host=hosts)
    def bmc_vanish(self, host: str) -> None:
        """The BMC accepts the next power-off, then stops answering."""
        self._step("bmc_vanish")
        self.world.bmc_vanish(host)

    @rule(host=hosts)
    def bmc_refuse(self, host: str) -> None:
        """The BMC refuses the next power actions."""
        self._step("bmc_refuse")
        self.world.bmc_refuse(host)

    @rule(seconds=st.sampled_from([1.0, 3.0]))
    def slow_shutdowns(self, seconds: float) -> None:
        """Graceful shutdowns take longer (3 s: past the 2 s lease)."""
        self._step("slow_shutdowns")
        self.world.slow_shutdowns(seconds)

    @rule()
    @precondition(lambda self: bool(self.world.cloud.faults.rules()))
    def clear_faults(self) -> None:
        """Every BMC fault ends."""
        self._step("clear_faults")
        self.world.clear_faults()

    @rule()
    def db_lock(self) -> None:
        """Another writer holds the database past the lease."""
        self._step("db_lock")
        self.world.db_lock()

    @rule(seconds=st.sampled_from([2.0, 5.0]))
    def slow_webhook(self, seconds: float) -> None:
        """The webhook trickles its next answer."""
        self._step("slow_webhook")
        self.world.slow_webhook(seconds)

    @rule()
    @precondition(lambda self: self.world.overloaded)
    def calm(self) -> None:
        """Usage back to normal."""
        self._step("calm")
        self.world.calm()
