"""The randomized stateful safety test of issues 33 and 45: every actor and fault, drawn by
weight and interleaved at random.

``SafetyMachine`` is a Hypothesis ``RuleBasedStateMachine`` over a ``World``
(tests/functional/safety_world.py) with one rule: each step draws its kind from ``STEPS`` by
weight (so no kind crowds the others out and each fault is drawn often enough to matter),
then the kind's own choices. A step is an actor (plan, approve, apply, apply --resume,
rollback, daemon --once, relief, the capacity watch, drain, undrain, hosts power, the
operator, the admin's migration and forced boot, a user) or a fault (kill -9 or SIGSTOP of a
running actor at a random moment, BMC delay, vanish and refusal, slow shutdowns and ones
longer than power_timeout, migrations that fail, hang or land elsewhere, Nova and Placement
5xx and timeouts, the store held or stopped, a slow webhook, an actor with its clock minutes
off). Any actor may name the cloud by its second clouds.yaml name.

The world's watcher checks the invariants every 50 ms while steps run; after every step
they are checked again, and a world the operator settled gets the settled ones.
``STATS`` counts steps, examples, faults, actions and violations for
tools/bench/safety_fuzz.py; with ``CONFIG["stop_on_violation"]`` False (the bench) a
violation is counted and the run goes on.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import time
from collections import Counter
from itertools import accumulate
from pathlib import Path
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from tests.functional.safety_store import fault_name
from tests.functional.safety_world import HOSTS, NAMES, START, World

#: Hosts consolidator may plan for (c5 is out of scope, c6 excluded).
WORK_HOSTS = ("c1", "c2", "c3", "c4")

#: Each kind of step, and its weight in the draw. Each fault kind of FAULT_KINDS has a
#: weight of about 4 in about 140 (a migration and an API fault step 4 per kind it picks
#: from), so that 5,000 steps draw each one about 140 times (issue 45: at least 100).
STEPS: tuple[tuple[str, int], ...] = (
    # actors
    ("plan", 3), ("approve", 2), ("apply", 5), ("plan_and_apply", 6), ("rollback", 5),
    ("take_snapshot", 2), ("daemon_once", 5), ("relieve", 3), ("capacity_watch", 2),
    ("drain", 4), ("undrain", 2), ("hosts_power", 5), ("operator", 4),
    ("admin_migrate", 3), ("create_server", 2), ("boot_forced", 4), ("delete_server", 2),
    ("settle", 3), ("calm", 1), ("wake", 2), ("clear_faults", 3),
    # faults
    ("kill9", 5), ("pause_past_lease", 5), ("bmc_delay", 4), ("bmc_vanish", 4),
    ("bmc_refuse", 4), ("slow_shutdowns", 4), ("long_shutdowns", 4), ("store_fault", 4),
    ("slow_webhook", 4), ("migration_fault", 12), ("api_fault", 16), ("skewed_actor", 4),
)
#: Every fault kind the world counts (World.faults), but the store's own
#: (safety_store.fault_name): what --min-faults waits for.
FAULT_KINDS = (
    "kill -9", "SIGSTOP past the lease", "BMC delay", "BMC vanish", "BMC refusal",
    "slow graceful shutdown", "shutdown longer than power_timeout", "migration fails",
    "migration hangs", "migration lands elsewhere", "Nova 5xx", "Nova timeout",
    "Placement 5xx", "Placement timeout", "slow webhook", "clock skew",
    "second clouds.yaml name")
_BOUNDS = list(accumulate(w for _, w in STEPS))
#: How often an actor uses the cloud's second clouds.yaml name (one in N).
SECOND_NAME_ONE_IN = 4
#: The clock shifts (seconds) an actor with a skewed clock runs with.
SKEWS = (-300.0, -120.0, 120.0, 300.0)

#: Counted over a whole run (tools/bench reads them).
STATS: dict[str, Any] = {"steps": 0, "examples": 0, "faults": Counter(),
                         "violations": Counter(), "actions": Counter(), "first": {},
                         "kinds": Counter(), "samples": 0}
#: stop_on_violation: fail the example at its first violation (the test); False: count and
#: go on (the bench). seed: mixed into each example's choices. log: a callable for each
#: line of the world's log. store: 'sqlite', 'postgresql' or 'mariadb'; pg_server: a
#: safety_store.Server (PgServer, MariaDbServer) the worlds' databases live on.
CONFIG: dict[str, Any] = {"stop_on_violation": True, "log": None, "store": "sqlite",
                          "pg_server": None, "seed": 45}


def fault_kinds() -> tuple[str, ...]:
    """Every fault kind of a run with this CONFIG: FAULT_KINDS and its store's fault."""
    return (*FAULT_KINDS, fault_name(CONFIG["store"], CONFIG["pg_server"]))


def kind_of(n: int) -> str:
    """The step kind the draw n (0 <= n < total weight) stands for."""
    for (name, _), bound in zip(STEPS, _BOUNDS, strict=True):
        if n < bound:
            return name
    raise ValueError(n)


class SafetyMachine(RuleBasedStateMachine):
    """Actors and faults on one small fake cloud; the invariants all the time."""

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="safety-fuzz-"))
        self.world = World(self.tmp / "world", log=CONFIG["log"], store=CONFIG["store"],
                           pg_server=CONFIG["pg_server"], power_timeout=4.0,
                           migration_timeout=8.0).start()
        self.plans: list[str] = []
        self.number = 0
        STATS["examples"] += 1

    def teardown(self) -> None:
        """Settle the world as an operator would, check it, stop it, count what it did."""
        try:
            self.world.begin_step(f"{self.number + 1} teardown")
            self.world.settle_as_operator()
            self.check(settle=False)
            self.report(self.world.check_settled())
        finally:
            self.world.stop()
            STATS["faults"].update(self.world.faults)
            STATS["actions"].update(self.world.actions)
            STATS["samples"] += self.world.samples
            if not os.environ.get("SAFETY_FUZZ_KEEP"):     # keep the worlds to look into
                shutil.rmtree(self.tmp, ignore_errors=True)

    def report(self, found: list[Any]) -> None:
        """Count violations; fail the example (the test) or go on (the bench)."""
        for violation in found:
            STATS["violations"][violation.invariant] += 1
            STATS["first"].setdefault(violation.invariant, str(violation))
        if found and CONFIG["stop_on_violation"]:
            raise AssertionError("; ".join(str(v) for v in found))

    def check(self, *, settle: bool = False) -> None:
        """The invariants (the watcher's since the last check included)."""
        self.report(self.world.observe(settle=settle))

    @invariant()
    def invariants_hold(self) -> None:
        """After every step."""
        self.check()

    @initialize(example=st.integers(0, 2**32 - 1))
    def started(self, example: int) -> None:
        """The world is up (the constructor started it); this example's choices come from
        a generator seeded by Hypothesis's draw (every choice drawn through Hypothesis would
        make its first example all zeros: one kind of step only)."""
        self.rnd = random.Random(f"{CONFIG['seed']}:{example}")

    def pick(self, choices: Any) -> Any:
        """One of the choices."""
        return self.rnd.choice(list(choices))

    def coin(self) -> bool:
        """Heads or tails."""
        return self.rnd.random() < 0.5

    @rule()
    def step(self) -> None:
        """One step: its kind drawn by weight, the cloud name its actor uses, its choices."""
        kind = kind_of(self.rnd.randrange(_BOUNDS[-1]))
        second = self.rnd.randrange(SECOND_NAME_ONE_IN) == 0
        self.number += 1
        STATS["steps"] += 1
        STATS["kinds"][kind] += 1
        self.world.alias, self.world.skew = NAMES[1] if second else NAMES[0], 0.0
        self.world.begin_step(f"step {self.number} {kind}")
        self.world.say(f"-- step {self.number} {kind} ({self.world.alias})")
        getattr(self, f"do_{kind}")()

    # -- helpers -----------------------------------------------------------------------

    def _plan(self) -> str | None:
        plan = self.world.plan()
        if plan is not None:
            self.plans.append(plan)
        return plan

    def _background_actor(self) -> bool:
        """Start an actor as a subprocess (an apply of a new plan, a drain, daemon --once),
        unless one runs (and is not stopped); True once one runs."""
        if [p for p in self.world.running() if p not in self.world.stopped]:
            return True
        which = self.pick(["apply", "drain", "daemon"])
        if which == "apply":
            plan = self._plan()
            if plan is None:
                return False
            self.world.apply_in_background(plan)
        elif which == "drain":
            self.world.drain_in_background(self.pick(WORK_HOSTS))
        else:
            self.world.spawn("daemon", "--once")
        return True

    # -- actors ------------------------------------------------------------------------

    def do_plan(self) -> None:
        """plan: a consolidation plan from a fresh snapshot."""
        self._plan()

    def do_approve(self) -> None:
        """plan approve."""
        if self.plans:
            self.world.approve(self.pick(self.plans))

    def do_apply(self) -> None:
        """apply PLAN --yes, or apply --resume PLAN: in this process, or as a subprocess left
        running for the signals and the other actors."""
        if not self.plans:
            return
        plan = self.pick(self.plans)
        resume = self.coin()
        if not self.coin():
            self.world.apply(plan, resume=resume)
        elif len(self.world.running()) < 2:
            self.world.apply_in_background(plan, resume=resume)

    def do_plan_and_apply(self) -> None:
        """plan, then apply it (in this process, or as a subprocess left running)."""
        background = self.coin()
        plan = self._plan()
        if plan is None:
            return
        if not background:
            self.world.apply(plan)
        elif len(self.world.running()) < 2:
            self.world.apply_in_background(plan)

    def do_rollback(self) -> None:
        """rollback --partial to a recorded snapshot; the operator may hold a host while it
        waits at its prompt."""
        index = self.rnd.randint(0, 3)
        hold = self.pick([None, *WORK_HOSTS])
        resume = self.coin()
        at_prompt = None if hold is None else (
            lambda: self.world.operator_service(hold, enable=False))
        self.world.rollback(index, at_prompt=at_prompt, resume=resume)

    def do_take_snapshot(self) -> None:
        """snapshot (a new rollback target)."""
        self.world.snapshot()

    def do_daemon_once(self) -> None:
        """daemon --once with auto_apply."""
        self.world.daemon_once()

    def do_relieve(self) -> None:
        """Overload some hosts, then plan --relieve and apply it."""
        hosts = sorted(self.rnd.sample(WORK_HOSTS, self.rnd.randint(1, len(WORK_HOSTS))))
        for host in hosts[1:]:
            self.world.overload(host)
        self.world.relieve(hosts[0])

    def do_capacity_watch(self) -> None:
        """Overload some hosts, then the capacity watch once."""
        for host in sorted(self.rnd.sample(WORK_HOSTS, self.rnd.randint(1, len(WORK_HOSTS)))):
            self.world.overload(host)
        self.world.capacity_watch()

    def do_drain(self) -> None:
        """hosts drain HOST [--power-off] --yes."""
        host = self.pick(WORK_HOSTS)
        self.world.drain(host, power_off=self.coin())

    def do_undrain(self) -> None:
        """hosts undrain HOST (one of the drained hosts)."""
        drained = sorted(self.world.known.drained)
        if drained:
            self.world.undrain(self.pick(drained))

    def do_hosts_power(self) -> None:
        """hosts power on|off HOST."""
        self.world.hosts_power(self.pick(["on", "off"]),
                               self.pick(HOSTS))

    def do_operator(self) -> None:
        """The operator disables (holds) or enables a host through os-services."""
        self.world.operator_service(self.pick(WORK_HOSTS),
                                    self.coin())

    def do_admin_migrate(self) -> None:
        """An admin forces a live migration onto an enabled host."""
        server = self.pick(sorted(START))
        dest = self.pick(HOSTS)
        rec = self.world.facts().hosts[dest]
        if rec["power"] == "on" and rec["status"] == "enabled":   # as an admin would
            self.world.admin_migrate(server, dest)

    def do_create_server(self) -> None:
        """A user boots a server on a powered, enabled host."""
        host = self.pick(HOSTS)
        rec = self.world.facts().hosts[host]
        if rec["power"] == "on" and rec["status"] == "enabled":
            self.world.create_server(host)

    def do_boot_forced(self) -> None:
        """An admin boots a server onto any host that is up, disabled ones included, those
        consolidator is shutting down too (a forced host)."""
        hosts = self.world.facts().hosts
        self.world.boot_forced(self.pick([h for h in HOSTS if hosts[h]["power"] == "on"]
                                         or HOSTS))

    def do_delete_server(self) -> None:
        """A user deletes one of the servers."""
        names = sorted(self.world.known.servers)
        if names:
            self.world.delete_server(self.pick(names))

    def do_settle(self) -> None:
        """The operator settles the world (faults end, nothing runs, daemon --once until
        quiet); the settled invariants."""
        self.world.settle_as_operator()
        self.check(settle=True)
        self.report(self.world.check_settled())

    def do_calm(self) -> None:
        """Usage back to normal."""
        if self.world.overloaded:
            self.world.calm()

    # -- faults ------------------------------------------------------------------------

    def _victim(self, *, sooner: bool = False) -> bool:
        """A running actor to signal, started if none runs, caught at a random moment (an
        early one if sooner)."""
        if not self._background_actor():
            return False
        time.sleep(self.pick([0.0, 0.3] if sooner else [0.0, 0.3, 0.8, 1.5, 2.5]))
        return True

    def do_kill9(self) -> None:
        """kill -9 a running actor (one more, caught sooner, if the first ended before the
        signal)."""
        for again in (False, True):
            if not self._victim(sooner=again) or self.world.kill9():
                return

    def do_pause_past_lease(self) -> None:
        """SIGSTOP a running actor (SIGCONT at a later step or when settling; one more,
        caught sooner, if the first ended before the signal)."""
        for again in (False, True):
            if not self._victim(sooner=again) or self.world.pause_past_lease():
                return

    def do_wake(self) -> None:
        """SIGCONT the paused actors."""
        self.world.resume_paused()

    def do_bmc_delay(self) -> None:
        """The BMC answers late."""
        self.world.bmc_delay(self.pick(HOSTS),
                             self.pick([0.5, 1.5, 3.0]))

    def do_bmc_vanish(self) -> None:
        """The BMC accepts the next power-off, then stops answering."""
        self.world.bmc_vanish(self.pick(HOSTS))

    def do_bmc_refuse(self) -> None:
        """The BMC refuses the next power actions."""
        self.world.bmc_refuse(self.pick(HOSTS))

    def do_slow_shutdowns(self) -> None:
        """Graceful shutdowns take longer (3 s: past the 2 s lease)."""
        self.world.slow_shutdowns(self.pick([1.0, 3.0]))

    def do_long_shutdowns(self) -> None:
        """Graceful shutdowns take longer than [executor] power_timeout, and a power-on
        does not cancel one under way (the operating system is already going down)."""
        self.world.slow_shutdowns(self.world.power_timeout + self.pick([1.0, 3.0]))
        self.world.shutdowns_not_cancelled()

    def do_clear_faults(self) -> None:
        """Every BMC and cloud fault ends."""
        self.world.clear_faults()

    def do_store_fault(self) -> None:
        """Another writer holds the store past the lease (PostgreSQL: stopped, started)."""
        self.world.db_lock(self.pick([1.0, 3.0, 6.0]))

    def do_slow_webhook(self) -> None:
        """The webhook trickles its next answer."""
        self.world.slow_webhook(self.pick([2.0, 5.0]))

    def do_migration_fault(self) -> None:
        """The next migration of a server fails, hangs or lands on another host; then, at
        times, an actor that migrates at once."""
        kind = self.pick(["fails", "hangs", "lands_elsewhere"])
        names = sorted(self.world.known.servers) or sorted(START)
        self.world.migration_fault(kind, self.pick(names))
        if self.coin():
            self.do_plan_and_apply()

    def do_api_fault(self) -> None:
        """Nova or Placement answers 5xx or times out; then, at times, an actor."""
        self.world.api_fault(self.pick(["compute", "placement"]),
                             self.pick(["500", "502", "503"]) if self.coin() else "timeout",
                             self.rnd.randint(1, 3))
        if self.coin():
            getattr(self, "do_" + self.pick(
                ["plan_and_apply", "daemon_once", "hosts_power", "drain"]))()

    def do_skewed_actor(self) -> None:
        """An actor whose clock is minutes off (a subprocess): hosts power, daemon --once,
        a drain, or an apply left running."""
        self.world.skew = self.pick(SKEWS)
        try:
            which = self.pick(["hosts_power", "daemon_once", "drain",
                                               "apply"])
            if which == "apply":
                plan = self._plan()
                if plan is not None and len(self.world.running()) < 2:
                    self.world.apply_in_background(plan)
            else:
                getattr(self, f"do_{which}")()
        finally:
            self.world.skew = 0.0
