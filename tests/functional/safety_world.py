"""A small fake cloud with every consolidator actor and fault at hand, for the safety tests.

``World`` serves six hosts (Redfish BMCs, all on 127.0.0.1) from an in-process FakeCloud,
keeps a migrated database (SQLite, or PostgreSQL: tests/functional/safety_store.py) and a
config (short lease, fast migrations, a webhook, the fake's Prometheus endpoint), and offers
each actor as a method: the consolidator commands run in this process through
``consolidator.cli.main`` (cheap), an apply that a signal is meant for runs as a subprocess,
and so does any command run with a shifted clock (tests/functional/safety_clock.py). Actors
name the cloud by either of its two clouds.yaml names ("fake", "fake2").

A watcher thread samples the cloud, its BMCs and the journal every 50 ms for the world's
whole life, and checks what a moment can show (a powered-off host holding a server, a lost
server, a protected host disabled or powered off, two lease holders acting at once); the
cloud tells it of each migration when it is requested and when it starts, so that one onto a
host whose BMC reads off or is shutting down is seen then. After each step ``observe()``
checks the invariants of tests/functional/safety_invariants.py and returns what broke;
``settle_as_operator()`` then ``check_settled()`` check a world the operator settled.
"""

from __future__ import annotations

import dataclasses
import io
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from consolidator.emulators.fake.bmc import write_private_yaml
from consolidator.emulators.fake.cloud import FakeCloud
from consolidator.scenario.files import parse_scenario
from tests.functional import safety_invariants as inv
from tests.functional.safety_store import Server, Store, make_store
from tests.functional.safety_webhook import Webhook

HOSTS = ("c1", "c2", "c3", "c4", "c5", "c6")
OUT_OF_SCOPE = frozenset({"c5"})          # az east; the config's scope is az west
EXCLUDED = frozenset({"c6"})              # [planner] excluded_hosts
PINNED = frozenset({"p0"})                # consolidator:exclude=true
LEASE_TTL = 2.0
#: The clouds.yaml names of the one cloud: actors use either.
NAMES = ("fake", "fake2")
#: Seconds between the watcher's samples.
SAMPLE_S = 0.05
#: The clients' timeout towards Nova and Placement (clouds.yaml api_timeout): a slower
#: answer is a timeout.
API_TIMEOUT_S = 4.0
CLOCK = Path(__file__).with_name("safety_clock.py")
#: The disabled reason of the operator's drain (consolidator writes it for 'hosts drain' only).
DRAIN_REASON = re.compile(r"consolidator: drained by plan (\S+)")
#: Where each scenario server starts, and its memory (its migration takes memory / bandwidth).
START = {"a0": "c1", "a1": "c1", "a2": "c1", "b0": "c2", "b1": "c2", "p0": "c2",
         "d0": "c3", "d1": "c3", "e0": "c4", "f0": "c5", "g0": "c6"}
_TEMPLATE: dict[str, Path] = {}


def scenario() -> dict[str, Any]:
    """Six hosts of 4 cores (16 vCPUs at 4:1); c5 in another zone, c6 excluded."""
    hosts = [{"name": h, "vcpus": 4, "memory_mb": 16384, "disk_gb": 200,
              "cpu_allocation_ratio": 4.0, "availability_zone": "east" if h == "c5" else "west",
              "bmc": {"driver": "redfish"}} for h in HOSTS]
    instances = [{"name": name, "host": host, "vcpus": 2, "memory_mb": 1024, "disk_gb": 10,
                  "usage": {"cpu_mean": 0.5, "cpu_std": 0.0}}
                 for name, host in START.items()]
    for inst in instances:
        if inst["name"] in PINNED:
            inst["metadata"] = {"consolidator:exclude": "true"}
    return {"hosts": hosts, "instances": instances}


@dataclass
class Result:
    """What one command returned."""

    code: int
    out: str
    err: str


class _Answer(io.StringIO):
    """A stdin whose first read runs a hook (what happens while a command waits at its
    prompt), then answers yes."""

    def __init__(self, hook: Any) -> None:
        super().__init__("y\n")
        self.hook = hook

    def readline(self, *args: Any) -> str:        # type: ignore[override]
        if self.hook is not None:
            hook, self.hook = self.hook, None
            hook()
        return super().readline(*args)


class World:
    """The cloud, the database, the config, and every actor and fault of issues 33 and 45."""

    def __init__(self, tmp: Path, *, log: Any = None, store: str = "sqlite",
                 pg_server: Server | None = None, power_timeout: float = 8.0,
                 migration_timeout: float = 20.0) -> None:
        self.tmp = Path(tmp)
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.say = log or (lambda line: None)
        self.cloud = FakeCloud(parse_scenario(scenario()), bmc=True,
                               migration_bandwidth_mb_s=4096.0, service_up_delay_s=0.05,
                               bmc_graceful_delay_s=0.1)
        self.webhook = Webhook()
        self.store_kind = store
        self.pg_server = pg_server
        self.store: Store | None = None
        self.power_timeout = power_timeout
        self.migration_timeout = migration_timeout
        self.known = inv.Known(servers=set(START), out_of_scope=OUT_OF_SCOPE,
                               excluded=EXCLUDED, pinned=PINNED)
        self.background: list[subprocess.Popen[bytes]] = []
        self.stopped: list[subprocess.Popen[bytes]] = []
        self._pause_lock = threading.RLock()     # pausing and resuming, one thread at a time
        self._saved_environ: dict[str, str | None] = {}   # the caller's, for stop()
        self.faults: Counter[str] = Counter()
        self.actions: Counter[str] = Counter()
        self.violations: list[inv.Violation] = []
        self._seen: set[str] = set()
        #: How many of self.violations observe() and check_settled() have handed out.
        self._reported = 0
        #: Each recorded snapshot: its id, where each server was, and the servers the admin
        #: or a user moved or created since (a rollback to it leaves those alone).
        self.snapshots: list[tuple[str, dict[str, str], set[str]]] = []
        self.plans: list[str] = []
        self.last_plan: Result | None = None     # what the last plan command answered
        #: Hosts the operator ran 'hosts drain' on (in this process or as a subprocess), not
        #: yet known to be held by it: see note_drains().
        self.drain_asked: set[str] = set()
        #: The operator's drains running as subprocesses, and their host: until one ends,
        #: what it does to its host (disable, power off) is the operator's own act.
        self.drains_running: dict[subprocess.Popen[bytes], str] = {}
        self.created = 0
        self.paused_at = 0.0
        self.overloaded = False
        self.last: inv.Facts | None = None
        #: The hosts protected when the step under way began (see protected_host_touched).
        self.protected_before: set[str] | None = None
        #: The clouds.yaml name the next commands use, and their clock's shift in seconds
        #: (a shifted command runs as a subprocess).
        self.alias = "fake"
        self.skew = 0.0
        #: What the watcher reports violations against: the step under way, and when it began.
        self.step = "start"
        self.step_began = time.monotonic()
        self.timeline = inv.Timeline()
        self._watch_lock = threading.RLock()
        self._watching = threading.Event()
        self._watcher: threading.Thread | None = None
        self._sample: inv.Facts | None = None
        self._rows: dict[int, inv.Row] = {}
        self.samples = 0

    @property
    def db(self) -> Path:
        """The SQLite file (a SQLite store only)."""
        assert self.store is not None and self.store.kind == "sqlite"
        return Path(self.store.url.split("///", 1)[1])

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> World:
        """Serve the cloud and the webhook; write the files; take the first snapshot; start
        watching."""
        self.cloud.start()
        self.webhook.start()
        self.store = make_store(self.store_kind, self.tmp, self.pg_server)
        self.store.on_locked = self.resume_paused
        clouds = self.tmp / "clouds.yaml"
        entry = dict(self.cloud.cloud_config(), api_timeout=API_TIMEOUT_S)
        clouds.write_text(yaml.safe_dump({"clouds": {name: entry for name in NAMES}},
                                         sort_keys=False), encoding="utf-8")
        bmc = self.cloud.write_bmc_yaml(self.tmp / "bmc.yaml")
        doc = yaml.safe_load(bmc.read_text())
        doc["defaults"]["timeout"] = 3     # a vanished BMC costs seconds, not half a minute
        write_private_yaml(bmc, doc)
        self.env = {"OS_CLIENT_CONFIG_FILE": str(clouds), "CONSOLIDATOR_BMC_FILE": str(bmc),
                    "CONSOLIDATOR_DB_URL": self.store.url, "OS_CLOUD": "fake"}
        # Set once, before any thread of this world runs, and restored at stop(): setenv in
        # one thread while another reads the environment (libpq's getenv of PG* at each
        # connect of the watcher) can crash the process, as it did a long run on PostgreSQL.
        self._saved_environ = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)
        self.config = self.tmp / "c.conf"
        self.config.write_text(f"""
[cloud]
name = fake
[planner]
algorithm = firstfit
n_plus_one = false
excluded_hosts = {','.join(sorted(EXCLUDED))}
scope = az=west
[telemetry]
prometheus_url = {self.cloud.prometheus_url}
[relief]
trend_query =
[daemon]
auto_apply = true
lease_ttl = {LEASE_TTL}
[executor]
poll_interval = 0.05
poll_first = 0.02
power_timeout = {self.power_timeout:g}
lease_ttl = {LEASE_TTL}
migration_timeout = {self.migration_timeout:g}
max_drift = 100
[power]
min_on_time = 0
[notify]
webhook_url = {self.webhook.url}
timeout = 1
attempts = 1
backoff = 0
""")
        self.snapshot()
        self.last = self.facts()
        self.protected_before = set(self.known.protected())
        self.cloud.state.observers.append(self._migration_seen)
        self._watching.set()
        self._watcher = threading.Thread(target=self._watch, name="safety-watcher",
                                         daemon=True)
        self._watcher.start()
        return self

    def stop(self) -> None:
        """End every process and thread this world started, then the cloud and the store."""
        self._watching.clear()
        if self._watcher is not None:
            self._watcher.join()
        for proc in self.stopped:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
        for proc in self.background:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.webhook.stopping = True
        if self.store is not None:
            self.store.join()
        self.webhook.stop()
        self.cloud.stop()
        if self.store is not None:
            self.store.close()
        for key, value in self._saved_environ.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

    def __enter__(self) -> World:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- watching ----------------------------------------------------------------------

    def begin_step(self, label: str) -> None:
        """Name the step under way (the watcher reports against it)."""
        with self._watch_lock:
            self.step, self.step_began = label, time.monotonic()

    def _when(self) -> str:
        return f"{self.step}, {time.monotonic() - self.step_began:.2f} s in"

    def _watch(self) -> None:
        """Sample every SAMPLE_S until the world stops; a failed read is tried again."""
        while self._watching.is_set():
            try:
                self.sample()
            except Exception as exc:     # noqa: BLE001 - a store being restarted, say
                self.say(f"watcher: a sample failed: {type(exc).__name__}: {exc}")
            time.sleep(SAMPLE_S)

    def _journal(self) -> list[inv.Row]:
        """Every journal row, the new and the running ones read again."""
        since = min((i for i, r in self._rows.items() if r.state == "running"),
                    default=max(self._rows, default=0) + 1) - 1
        for row in inv.read_journal(self.store, since):
            self._rows[row.id] = row
        return [self._rows[i] for i in sorted(self._rows)]

    def sample(self) -> list[inv.Violation]:
        """One sample: the cloud and the journal now, against the sample before; the
        violations it shows."""
        with self._watch_lock:
            # The servers known before the cloud is read: one is noted after it was made and
            # forgotten before it is deleted, so these must all be in what is read next.
            known = dataclasses.replace(self.known, servers=set(self.known.servers))
            rows = self._journal()
            at = time.monotonic()
            now_state = self.cloud.state.summary()
            assert self.cloud.bmcs is not None
            going_down = set(self.cloud.bmcs.power.shutting_down())
            now = inv.Facts.of(now_state, rows)
            self.timeline.update(at, rows, frozenset(
                m["server_id"] for m in now_state["migrations"]
                if m["status"] in ("queued", "preparing", "running", "post-migrating")),
                {h: (r["status"], r.get("disabled_reason"),
                     "going down" if h in going_down else r["power"])
                 for h, r in now_state["hosts"].items()})
            found = self.timeline.two_actors()
            assert self.store is not None
            found += self.timeline.update_leases(at, self.store.leases(), LEASE_TTL)
            if self._sample is not None:
                found += inv.moment(self._sample, now, known)
            self._sample = now
            self.samples += 1
            return self.record(found, at=self._when())

    def _migration_seen(self, moment: str, mig: Any) -> None:
        """The cloud's word that a migration is requested or starts (under its lock): one
        consolidator asked for onto a host whose BMC reads off or is shutting down breaks
        migration_onto_off_host (an admin's forced one is theirs). One a fault lands on
        another host is placed there by Nova, not by consolidator."""
        if mig.dest is None:
            return
        if moment == "started" and mig.fault == "elsewhere":   # Nova's choice, not ours
            server = self.cloud.state.servers[mig.server_id].name
            self.known.placed_by_others[server] = mig.dest
            self.by_others(server)
        if mig.forced:
            return
        assert self.cloud.bmcs is not None
        dest = self.cloud.state.hosts[mig.dest]
        why = "its BMC reads off" if dest.power == "off" else \
            "its shutdown is pending" if mig.dest in self.cloud.bmcs.power.shutting_down() \
            else None
        if why is not None:
            server = self.cloud.state.servers[mig.server_id].name
            self.record([inv.Violation("migration_onto_off_host",
                                       f"a migration of {server} {moment} onto {mig.dest} "
                                       f"while {why}")], at=self._when())

    def cli(self, *args: str, at_prompt: Any = None) -> Result:
        """Run one consolidator command under the cloud name self.alias: in this process, or
        with a shifted clock (self.skew) as a subprocess; at_prompt runs when it asks (a
        subprocess: just before it starts)."""
        from consolidator.cli import main

        full = ["--config", str(self.config), "--cloud", self.alias, *args]
        self.actions[" ".join(args[:2]) if args[0] in ("hosts", "plan")
                     and not args[1].startswith("-") else args[0]] += 1
        self._count_name_and_clock()
        if self.skew:
            if at_prompt is not None:
                at_prompt()
            proc = subprocess.run(self._argv(full), input=b"y\n", capture_output=True,
                                  env=self._env(), timeout=300)
            self.say(f"$ consolidator {' '.join(args)} (clock {self.skew:+.0f} s, "
                     f"{self.alias}) -> {proc.returncode}")
            return Result(proc.returncode, proc.stdout.decode(errors="replace"),
                          proc.stderr.decode(errors="replace"))
        out, err = io.StringIO(), io.StringIO()
        stdin = sys.stdin
        sys.stdin = _Answer(at_prompt)
        try:
            with self._as_operator(), redirect_stdout(out), redirect_stderr(err):
                code = main(full)
        finally:
            sys.stdin = stdin
        self.say(f"$ consolidator {' '.join(args)} ({self.alias}) -> {code}")
        return Result(code, out.getvalue(), err.getvalue())

    def _count_name_and_clock(self) -> None:
        if self.alias != NAMES[0]:
            self.faults["second clouds.yaml name"] += 1
        if self.skew:
            self.faults["clock skew"] += 1

    def _argv(self, full: list[str]) -> list[str]:
        if self.skew:
            return [sys.executable, str(CLOCK), *full]
        return [sys.executable, "-m", "consolidator", *full]

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        env.update(self.env)
        env["PYTHONPATH"] = os.pathsep.join(p for p in [str(Path(__file__).parents[2]),
                                                        env.get("PYTHONPATH", "")] if p)
        env["CONSOLIDATOR_TEST_CLOCK_SHIFT_S"] = str(self.skew)
        return env

    @contextmanager
    def _as_operator(self) -> Iterator[None]:
        """A command run in this process, in this world's environment (clouds.yaml, BMC
        file, database: set by start() for the world's life); logging restored after it."""
        assert all(os.environ.get(k) == v for k, v in self.env.items()), \
            "the world's environment changed under it"
        root = logging.getLogger()
        handlers, level = root.handlers[:], root.level
        try:
            yield
        finally:
            root.handlers[:], root.level = handlers, level

    def spawn(self, *args: str) -> subprocess.Popen[bytes]:
        """Run one consolidator command as a subprocess (for the signals), under the cloud
        name self.alias and with the clock shifted by self.skew."""
        log = (self.tmp / f"bg-{len(self.background)}.log").open("wb")
        full = ["--config", str(self.config), "--cloud", self.alias, *args]
        proc = subprocess.Popen(self._argv(full), stdout=log, stderr=log, env=self._env())
        log.close()
        self.background.append(proc)
        self.actions[f"{args[0]} (subprocess)"] += 1
        self._count_name_and_clock()
        self.say(f"$ consolidator {' '.join(args)} & (pid {proc.pid}, {self.alias}, clock "
                 f"{self.skew:+.0f} s)")
        return proc

    def running(self) -> list[subprocess.Popen[bytes]]:
        """The background commands still running."""
        return [p for p in self.background if p.poll() is None]

    # -- the actors --------------------------------------------------------------------

    def snapshot(self) -> str | None:
        """Record a snapshot (a rollback target) and remember where everything was."""
        result = self.cli("snapshot")
        if result.code != 0:
            return None
        snap = result.out.strip().split()[-1]
        self.snapshots.append((snap, self.facts().where(), set()))
        return snap

    def plan(self, *extra: str) -> str | None:
        """Make a plan from a fresh snapshot; its id, or None when refused."""
        result = self.cli("plan", *extra, "--format", "id")
        self.last_plan = result
        if result.code != 0 or not result.out.strip():
            return None
        plan_id = result.out.strip().splitlines()[-1].strip()
        self.plans.append(plan_id)
        return plan_id

    def approve(self, plan_id: str) -> Result:
        """plan approve."""
        return self.cli("plan", "approve", plan_id)

    def apply(self, plan_id: str, *, resume: bool = False) -> Result:
        """apply [--resume] in this process."""
        return self.cli("apply", plan_id, "--resume" if resume else "--yes")

    def apply_to_the_end(self, plan_id: str, tries: int = 3) -> Result:
        """apply, then 'apply --resume' while it ends interrupted (up to `tries` times), as
        the operator is told to: under a heavy load the world's 2 s lease can lapse between
        two renewals, and the apply then stops (found by .ci/run under a load of 12). For a
        test whose apply is a step before the one it checks."""
        result = self.apply(plan_id)
        for _ in range(tries):
            if result.code == 0 or "was interrupted" not in result.out:
                break
            result = self.apply(plan_id, resume=True)
        return result

    def apply_in_background(self, plan_id: str, *, resume: bool = False
                            ) -> subprocess.Popen[bytes]:
        """apply [--resume] as a subprocess, for kill -9 and SIGSTOP."""
        return self.spawn("apply", plan_id, "--resume" if resume else "--yes")

    def rollback(self, index: int, *, at_prompt: Any = None, resume: bool = False) -> Result:
        """rollback --partial to a recorded snapshot (asked, answered yes after at_prompt);
        a rollback that says it finished is checked against the snapshot."""
        snap, target, others = self.snapshots[index % len(self.snapshots)]
        args = ["rollback", snap, "--partial"] + (["--resume"] if resume else [])
        result = self.cli(*args, at_prompt=at_prompt)
        if result.code == 0 and not self.running():
            self.settle()
            now = self.facts()
            reported = others | reported_left(result, target)
            self.record(inv.rollback_incomplete(target, now, self.known, reported),
                        at=f"end of {self.step}")
        return result

    def daemon_once(self) -> Result:
        """daemon --once (auto_apply: it plans, applies, ramps, relieves)."""
        return self.cli("daemon", "--once")

    def relieve(self, host: str) -> Result:
        """Overload a host through its servers' usage, then plan --relieve and apply it."""
        self.overload(host)
        plan_id = self.plan("--relieve")
        if plan_id is None:
            return Result(1, "", "no relief plan")
        return self.apply(plan_id)

    def overload(self, host: str) -> None:
        """Raise the usage of a host's servers above its cores (/_fake/usage)."""
        import urllib.request

        self.overloaded = True
        self.say(f"usage: {host}'s servers at 3 cores each")
        for name, where in self.facts().where().items():
            if where == host:
                req = urllib.request.Request(
                    f"{self.cloud.base_url}/_fake/usage/{name}",
                    data=b'{"cpu_mean": 3.0, "cpu_std": 0.0}', method="POST",
                    headers={"Content-Type": "application/json"})
                urllib.request.urlopen(req, timeout=10).close()

    def calm(self) -> None:
        """Every server's usage back to half a core."""
        import urllib.request

        self.overloaded = False
        self.say("usage: every server at half a core")
        for name in self.facts().servers:
            req = urllib.request.Request(
                f"{self.cloud.base_url}/_fake/usage/{name}",
                data=b'{"cpu_mean": 0.5, "cpu_std": 0.0}', method="POST",
                headers={"Content-Type": "application/json"})
            urllib.request.urlopen(req, timeout=10).close()

    def capacity_watch(self) -> list[str]:
        """The daemon's capacity watch, once, in this process."""
        from consolidator.app.context import AppContext
        from consolidator.daemon import Daemon

        self.actions["capacity watch"] += 1
        self._count_name_and_clock()
        with self._as_operator():
            ctx = AppContext(config_file=str(self.config), cloud=self.alias,
                             db_url=self.env["CONSOLIDATOR_DB_URL"])
            daemon = Daemon(ctx)
            try:
                if not daemon.lead():
                    return []
                return daemon.capacity_watch()
            finally:
                daemon.resign()
                ctx.engine().dispose()

    def drain(self, host: str, *, power_off: bool) -> Result:
        """hosts drain HOST [--power-off] --yes; a drain that finished protects the host, and
        so does one that failed after it disabled the host (see note_drains())."""
        self.known.operator_acts.add(host)
        self.drain_asked.add(host)
        result = self.cli("hosts", "drain", host, *(["--power-off"] if power_off else []),
                          "--yes")
        if result.code == 0:
            self.known.drained.add(host)
            self.drain_asked.discard(host)
        self.note_drains()
        return result

    def drain_in_background(self, host: str) -> subprocess.Popen[bytes]:
        """hosts drain HOST --power-off --yes as a subprocess (for the signals)."""
        self.known.operator_acts.add(host)
        self.drain_asked.add(host)
        proc = self.spawn("hosts", "drain", host, "--power-off", "--yes")
        self.drains_running[proc] = host
        return proc

    def note_drains(self, now: inv.Facts | None = None) -> None:
        """The hosts an operator's drain holds: once the cloud shows a host the operator
        drained disabled with the drain's reason, and the drain's plan has ended, the host
        is drained, whether the drain succeeded or not (its power-off failed, it was killed
        and resumed...): the operator's drain holds it until undrain, disabled, on and
        empty if it was not powered off. (Until its plan ends, a drain still under way may
        power it off: that is the operator's own act.)"""
        if not self.drain_asked:
            return
        assert self.store is not None
        hosts = (now or self.facts()).hosts
        for host in sorted(self.drain_asked):
            found = DRAIN_REASON.match(hosts[host].get("disabled_reason") or "")
            if hosts[host]["status"] != "disabled" or found is None:
                continue
            status = self.store.rows("SELECT status FROM plans WHERE id = :id",
                                     id=found.group(1))
            if status and status[0][0] not in ("proposed", "approved", "running",
                                               "interrupted"):
                self.known.drained.add(host)
                self.drain_asked.discard(host)

    def _forget_drain_asked(self, host: str) -> None:
        """The operator ended their drain of the host: forget it, unless a drain of theirs
        is still running (paused, say), which once it goes on drains the host for them
        (found by the PostgreSQL long run, seed 9602)."""
        if host not in {h for p, h in self.drains_running.items() if p.poll() is None}:
            self.drain_asked.discard(host)

    def undrain(self, host: str) -> Result:
        """hosts undrain HOST (the operator's own wish: the host is no longer drained)."""
        was = host in self.known.drained
        self.known.operator_acts.add(host)
        self.known.drained.discard(host)
        self._forget_drain_asked(host)
        result = self.cli("hosts", "undrain", host)
        if result.code != 0 and was and self.facts().hosts[host]["status"] == "disabled":
            self.known.drained.add(host)
        if result.code == 0 and self.facts().hosts[host]["status"] == "enabled":
            # the operator's undrain put the host back in service: their own earlier
            # 'hosts power off --force' no longer holds it (found by the PostgreSQL long
            # run, seed 5546: a daemon cycle that then emptied it was counted a violation)
            self.known.powered_off.discard(host)
        return result

    def hosts_power(self, action: str, host: str) -> Result:
        """hosts power on|off HOST. The operator's power-off is their hold on the host
        (until their power-on): nothing of consolidator's is to power it on or enable it."""
        extra = ["--yes", "--force"] if action == "off" else []
        self.known.operator_acts.add(host)
        if action == "on":
            self.known.asked_on.add(host)
            self.known.powered_off.discard(host)
        result = self.cli("hosts", "power", action, host, *extra)
        if action == "off" and result.code == 0:
            self.known.powered_off.add(host)
        return result

    def migrating_to(self, host: str) -> list[str]:
        """The servers with a live migration under way into this host."""
        state = self.cloud.state.summary()
        ids = {s["id"]: name for name, s in state["servers"].items()}
        return [ids[m["server_id"]] for m in state["migrations"] if m["dest"] == host
                and m["server_id"] in ids
                and m["status"] in ("queued", "preparing", "running", "post-migrating")]

    def by_others(self, server: str) -> None:
        """The admin or a user placed this server: no rollback is to move it back."""
        for _, _, others in self.snapshots:
            others.add(server)

    def _nova(self, method: str, path: str, body: Any, microversion: str = "2.53") -> int:
        import json
        import urllib.error
        import urllib.request

        token = self._token()
        req = urllib.request.Request(
            f"{self.cloud.compute_url}{path}", data=json.dumps(body).encode(), method=method,
            headers={"Content-Type": "application/json", "X-Auth-Token": token,
                     "OpenStack-API-Version": f"compute {microversion}"})
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                return resp.status
        except urllib.error.HTTPError as exc:
            return exc.code

    def _token(self) -> str:
        import json
        import urllib.request

        body = {"auth": {"identity": {"methods": ["password"], "password": {"user": {
            "name": "admin", "domain": {"name": "Default"}, "password": "secret"}}},
            "scope": {"project": {"name": "admin", "domain": {"name": "Default"}}}}}
        req = urllib.request.Request(f"{self.cloud.auth_url}/auth/tokens",
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return str(resp.headers["X-Subject-Token"])

    #: The reason the operator gives when they hold a host.
    HOLD_REASON = "DIMM errors: RMA, keep off"

    def operator_service(self, host: str, enable: bool) -> int:
        """The operator disables (with a reason of their own: held) or enables a host
        through Nova's os-services API; an enable ends a hold or a drain (the gate reads the
        live service, as Nova's scheduler does)."""
        service = self.cloud.state.hosts[host].service_id
        mark = max((r.id for r in self.facts().journal), default=0)
        body: dict[str, Any] = {"status": "enabled"} if enable else {
            "status": "disabled", "disabled_reason": self.HOLD_REASON}
        self.known.operator_acts.add(host)
        assert self.cloud.bmcs is not None
        # read before the request: a shutdown requested after it is consolidator's doing
        late = not enable and host in self.cloud.bmcs.power.shutting_down()
        status = self._nova("PUT", f"/os-services/{service}", body)
        self.actions["operator enable" if enable else "operator disable"] += 1
        self.say(f"operator {'enables' if enable else 'disables'} {host}"
                 f"{' (its shutdown under way)' if late else ''} -> {status}")
        if status == 200:
            if not enable:      # a migration already under way may still land there
                for name in self.migrating_to(host):
                    self.known.placed_by_others[name] = host
            self.known.operator_status[host] = ("enabled" if enable else "disabled", mark)
            if enable:      # the operator ends a hold, or a drain, through Nova too
                self.known.held.discard(host)
                self.known.drained.discard(host)
                self._forget_drain_asked(host)
                self.known.operator_reason.pop(host, None)
                self.known.held_late.discard(host)
            else:
                self.known.held.add(host)
                if late:        # the shutdown already requested is the operator's race
                    self.known.held_late.add(host)
                self.known.operator_reason[host] = self.HOLD_REASON
        return status

    def admin_migrate(self, server: str, dest: str) -> int:
        """An admin's forced live migration (2.30, force: no scheduler checks)."""
        rec = self.cloud.state.server(server)
        if rec is None:
            return 404
        self.known.placed_by_others[server] = dest
        if self._shutting_down(dest):
            self.known.forced_late[server] = dest
        status = self._nova("POST", f"/servers/{rec.id}/action", {"os-migrateLive": {
            "host": dest, "block_migration": "auto", "force": True}}, "2.30")
        self.actions["admin migrate"] += 1
        self.say(f"admin migrates {server} to {dest} -> {status}")
        if status == 202:
            self.by_others(server)
        else:
            self.known.placed_by_others.pop(server, None)
            self.known.forced_late.pop(server, None)
        return status

    def create_server(self, host: str) -> bool:
        """A user's server appears on a host (the fake's control API)."""
        import json
        import urllib.error
        import urllib.request

        self.created += 1
        name = f"n{self.created}"
        body = {"name": name, "host": host, "vcpus": 1, "memory_mb": 512, "disk_gb": 1,
                "usage": {"cpu_mean": 0.2, "cpu_std": 0.0}}
        req = urllib.request.Request(f"{self.cloud.base_url}/_fake/servers",
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
        self.actions["create server"] += 1
        self.known.placed_by_others[name] = host
        try:
            urllib.request.urlopen(req, timeout=10).close()
        except urllib.error.HTTPError:
            return False
        with self._watch_lock:          # not between a sample's read and its check
            self.known.servers.add(name)
        self.by_others(name)
        self.say(f"user creates {name} on {host}")
        return True

    def boot_forced(self, host: str) -> int:
        """An admin boots a server onto a host of their choice, disabled or not, through
        Nova's API (availability_zone "AZ:HOST": a forced host, no scheduler). One that lands
        on a host whose shutdown is already under way is the admin's race: it is noted so
        (off_host_holds_server leaves it out), not consolidator's doing."""
        import json
        import urllib.error
        import urllib.request

        self.created += 1
        name = f"f{self.created}"
        zone = "east" if host in OUT_OF_SCOPE else "west"
        late = self._shutting_down(host)
        self.known.placed_by_others[name] = host
        if late:
            self.known.forced_late[name] = host
        body = {"server": {"name": name, "flavorRef": "c2-m1024-d10", "imageRef": "cirros",
                           "networks": "none", "availability_zone": f"{zone}:{host}"}}
        req = urllib.request.Request(
            f"{self.cloud.compute_url}/servers", data=json.dumps(body).encode(), method="POST",
            headers={"Content-Type": "application/json", "X-Auth-Token": self._token(),
                     "OpenStack-API-Version": "compute 2.74"})
        self.actions["admin boots on a forced host"] += 1
        note = ""
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                status = resp.status
        except urllib.error.HTTPError as exc:
            status = exc.code
            note = f": {exc.read()[:200]!r}"
        note = (", its shutdown under way" if late else "") + (note if status != 202 else "")
        self.say(f"admin boots {name} on {host} (forced{note}) -> {status}")
        if status == 202:
            with self._watch_lock:      # not between a sample's read and its check
                self.known.servers.add(name)
            self.by_others(name)
        else:
            self.known.forced_late.pop(name, None)
        return status

    def _shutting_down(self, host: str) -> bool:
        """Whether the host's shutdown is under way: its BMC is shutting it down, or a
        power-off of it is journaled as running or unconfirmed."""
        assert self.cloud.bmcs is not None
        return host in self.cloud.bmcs.power.shutting_down() or any(
            r.target == host and r.action == "power_off"
            and r.state in ("running", "unconfirmed") for r in self.facts().journal)

    def delete_server(self, name: str) -> bool:
        """A user deletes a server."""
        import urllib.error
        import urllib.request

        req = urllib.request.Request(f"{self.cloud.base_url}/_fake/servers/{name}",
                                     method="DELETE")
        self.actions["delete server"] += 1
        # Under the watcher's lock: a sample that copied the known servers before the server
        # was forgotten must not read the cloud after it was deleted (instance_lost: 'a0 is
        # gone', PostgreSQL long run, seed 9402, job 0, step 32).
        with self._watch_lock:
            was = name in self.known.servers
            self.known.servers.discard(name)
            try:
                urllib.request.urlopen(req, timeout=10).close()
            except urllib.error.HTTPError:
                if was:
                    self.known.servers.add(name)
                return False
        self.say(f"user deletes {name}")
        return True

    # -- the faults --------------------------------------------------------------------

    def kill9(self) -> bool:
        """kill -9 the newest running background command."""
        for proc in reversed(self.running()):
            if proc in self.stopped:
                os.kill(proc.pid, signal.SIGCONT)
            proc.kill()
            proc.wait()
            self.faults["kill -9"] += 1
            self.say(f"kill -9 {proc.pid}")
            return True
        return False

    def pause_past_lease(self, seconds: float = LEASE_TTL + 1.0) -> bool:
        """SIGSTOP the newest running background command past the lease ttl, run nothing
        meanwhile (the caller's next steps do), SIGCONT it at resume_paused()."""
        with self._pause_lock:
            for proc in reversed(self.running()):
                if proc in self.stopped:
                    continue
                os.kill(proc.pid, signal.SIGSTOP)
                self.stopped.append(proc)
                self.paused_at = time.monotonic()
                self.faults["SIGSTOP past the lease"] += 1
                self.say(f"SIGSTOP {proc.pid}")
                return True
            return False

    def resume_paused(self) -> bool:
        """SIGCONT every stopped command, once it slept past the lease ttl. Also called
        when a read finds the store locked: an actor paused inside a commit holds SQLite's
        lock, and nothing else may read or write until it runs again."""
        with self._pause_lock:     # the watcher's reads may call it too
            woke = False
            if self.stopped:
                time.sleep(max(0.0, self.paused_at + LEASE_TTL + 0.5 - time.monotonic()))
            for proc in self.stopped:
                if proc.poll() is None:
                    os.kill(proc.pid, signal.SIGCONT)
                    woke = True
                    self.say(f"SIGCONT {proc.pid}")
            self.stopped = []
            return woke

    def bmc_delay(self, host: str, seconds: float) -> None:
        """The host's BMC answers its next requests late."""
        self.cloud.add_fault({"type": "slow", "path": f"/redfish/v1/Systems/{host}*",
                              "seconds": seconds, "count": 4})
        self.faults["BMC delay"] += 1
        self.say(f"fault: {host}'s BMC answers {seconds} s late")

    def bmc_vanish(self, host: str) -> None:
        """The host's BMC accepts its next power-off, then stops answering."""
        self.cloud.add_fault({"type": "bmc_vanishes_after_off", "host": host})
        self.faults["BMC vanish"] += 1
        self.say(f"fault: {host}'s BMC vanishes after its next power-off")

    def bmc_refuse(self, host: str) -> None:
        """The host's BMC refuses its next two power actions (HTTP 500)."""
        self.cloud.add_fault({"type": "http_error", "status": 500, "method": "POST",
                              "path": f"/redfish/v1/Systems/{host}/Actions/*", "count": 2})
        self.faults["BMC refusal"] += 1
        self.say(f"fault: {host}'s BMC refuses its next 2 power actions")

    def slow_shutdowns(self, seconds: float) -> None:
        """Graceful shutdowns take this long from now on (past the lease when > ttl; past
        [executor] power_timeout when longer than it)."""
        assert self.cloud.bmcs is not None
        self.cloud.bmcs.power.graceful_delay_s = seconds
        self.faults["shutdown longer than power_timeout" if seconds > self.power_timeout
                    else "slow graceful shutdown"] += 1
        self.say(f"fault: graceful shutdowns take {seconds} s")

    def shutdowns_not_cancelled(self) -> None:
        """A power-on during a graceful shutdown no longer cancels it, on every host (the
        operating system is going down, as on real hardware)."""
        for host in HOSTS:
            self.cloud.add_fault({"type": "bmc_shutdown_not_cancelled", "host": host})
        self.say("fault: a power-on no longer cancels a graceful shutdown")

    def migration_fault(self, kind: str, server: str) -> None:
        """The next live migration of this server fails, hangs or lands on another host
        (kind: fails, hangs, lands_elsewhere)."""
        self.cloud.add_fault({"type": f"migration_{kind}", "instance": server, "count": 1})
        self.faults[f"migration {kind.replace('_', ' ')}"] += 1
        self.say(f"fault: the next migration of {server} {kind.replace('_', ' ')}")

    def api_fault(self, service: str, kind: str, count: int = 2) -> None:
        """Nova (service 'compute') or Placement answers its next `count` requests with a
        5xx (kind '500', '502', '503'), or (kind 'timeout') its next one past the clients'
        api_timeout."""
        path = "/compute/v2.1/*" if service == "compute" else "/placement/*"
        name = "Nova" if service == "compute" else "Placement"
        if kind == "timeout":
            self.cloud.add_fault({"type": "slow", "path": path, "seconds": API_TIMEOUT_S + 1.0,
                                  "count": 1})
            self.faults[f"{name} timeout"] += 1
        else:
            self.cloud.add_fault({"type": "http_error", "path": path, "status": int(kind),
                                  "count": count})
            self.faults[f"{name} 5xx"] += 1
        self.say(f"fault: {name} answers {kind} ({count if kind != 'timeout' else 1} times)")

    def clear_faults(self) -> None:
        """Every BMC and HTTP fault ends; shutdowns are fast again."""
        self.cloud.clear_faults()
        assert self.cloud.bmcs is not None
        self.cloud.bmcs.power.graceful_delay_s = 0.1
        self.say("faults cleared")

    def db_lock(self, seconds: float = LEASE_TTL + 1.0) -> None:
        """Another writer holds the database for this long (SQLite: BEGIN EXCLUSIVE;
        PostgreSQL: its server stopped and started, or every table locked)."""
        assert self.store is not None
        kind = self.store.hold(seconds)
        self.faults[kind] += 1
        self.say(f"fault: {kind} for {seconds} s")

    def slow_webhook(self, seconds: float) -> None:
        """The webhook's next answer comes one byte at a time, for about this long in all
        (each byte well within the [notify] timeout of 1 s)."""
        self.webhook.slow_s = seconds
        if seconds:
            self.faults["slow webhook"] += 1
            self.say(f"fault: the webhook's next answer trickles for {seconds} s")

    # -- observing ---------------------------------------------------------------------

    def facts(self) -> inv.Facts:
        """The fake cloud's state and the journal, now."""
        return inv.Facts.read(self.cloud.state.summary(), self.store)

    def settle(self, timeout: float = 180.0) -> bool:
        """Wait for the background commands, migrations, shutdowns and locks to end (a
        stopped command is woken first); True if all did. The deadline is generous: a
        command that waited out a lock (SQLite's 30 s busy timeout) still has its safety
        steps to take, on a loaded machine too; only a hang reaches it."""
        self.resume_paused()
        deadline = time.monotonic() + timeout
        assert self.cloud.bmcs is not None and self.store is not None
        while time.monotonic() < deadline:
            busy = (self.running() or self.facts().migrating > len(self.hung())
                    or self.cloud.bmcs.power.shutting_down() or self.store.busy())
            if not busy:
                return True
            time.sleep(0.05)
        return False

    def hung(self) -> list[Any]:
        """The live migrations a fault keeps running for ever (nobody aborted them)."""
        with self.cloud.state.locked():
            return [(self.cloud.state.servers[m.server_id].id, m.id)
                    for m in self.cloud.state.migrations
                    if m.fault == "hangs" and m.in_progress]

    def abort_hung(self) -> None:
        """The operator aborts each migration left hanging (nova live-migration-abort)."""
        for server_id, mid in self.hung():
            status = self._nova("DELETE", f"/servers/{server_id}/migrations/{mid}", None,
                                "2.24")
            self.actions["operator aborts a hung migration"] += 1
            self.say(f"operator aborts migration {mid} of {server_id} -> {status}")

    def settle_as_operator(self, rounds: int = 3) -> bool:
        """What an operator does before walking away: every fault ends, nothing runs, an
        interrupted plan is resumed, then daemon --once (with the usual name and clock)
        until a round changes nothing; True once quiet."""
        self.clear_faults()
        self.slow_webhook(0.0)
        self.alias, self.skew = NAMES[0], 0.0
        self.settle()
        self.abort_hung()
        self.settle()
        self.await_dead_leases()
        assert self.store is not None
        for (plan_id,) in self.store.rows("SELECT id FROM plans WHERE status IN "
                                          "('running', 'interrupted')"):
            self.cli("apply", plan_id, "--resume")
            self.settle()
            self.abort_hung()
        for _ in range(rounds):
            before = self._shape()
            self.daemon_once()
            self.settle()
            if self._shape() == before:
                return True
        return False

    def await_dead_leases(self) -> None:
        """Nothing runs now, so an executor lease still held is a killed holder's (kill -9
        keeps it until it expires): wait one TTL, as an operator told 'an apply is running'
        would, before resuming or running the daemon (both are refused until then)."""
        assert self.store is not None
        if any(holder for _name, holder, _expires in self.store.leases()):
            time.sleep(LEASE_TTL + 0.5)

    def _shape(self) -> Any:
        state = self.cloud.state.summary()
        return ({h: (r["power"], r["status"]) for h, r in state["hosts"].items()},
                {n: s["host"] for n, s in state["servers"].items()})

    def check_settled(self) -> list[inv.Violation]:
        """The settled world's invariants (after settle_as_operator)."""
        assert self.store is not None
        with self._watch_lock:
            self.sample()
            now = self.facts()
            self.note_drains(now)
            found = self.record(inv.check_settled(now, self.known, self.store.host_states()),
                                at=f"settled after {self.step}")
        for host in sorted({h for h in HOSTS for v in found
                            if re.search(rf"\b{h}\b", v.detail)}):
            self.say(f"  {host}'s recorded states: " + "; ".join(
                f"{r[0]}: {r[1]} -> {r[2]} by {r[3]} ({r[4]})" for r in self.store.rows(
                    "SELECT cloud, before, after, actor, why FROM host_state_changes WHERE "
                    "host = :host ORDER BY id", host=host)))
        return self.fresh()

    def record(self, found: list[inv.Violation], at: str = "") -> list[inv.Violation]:
        """Keep the violations not seen before (by what they are, not when); return them."""
        new = []
        with self._watch_lock:
            for v in found:
                if v.key in self._seen:
                    continue
                self._seen.add(v.key)
                v = inv.Violation(v.invariant, v.detail, v.at or at)
                new.append(v)
                self.say(f"VIOLATION {v}")
            self.violations += new
        return new

    def observe(self, *, settle: bool = False) -> list[inv.Violation]:
        """Check every invariant against the state before the step; the new violations
        (the watcher's of the step included)."""
        settled = self.settle() if settle else not (self.running() or self.facts().migrating)
        with self._watch_lock:
            if self._watcher is not None:
                self.sample()
            now = self.facts()
            assert self.last is not None
            # Once settled, the admin's race is no excuse: a rescue had its time.
            known = dataclasses.replace(self.known, forced_late={}) if settled else self.known
            self.record(inv.check_step(self.last, now, known, settled=settled,
                                       protected_before=self.protected_before),
                        at=f"end of {self.step}")
            self.last = now
            self.note_drains(now)
            self.protected_before = set(self.known.protected())
            self.known.asked_on = set()
            # an operator's drain still running (paused, say) acts for them in later steps
            self.drains_running = {p: h for p, h in self.drains_running.items()
                                   if p.poll() is None}
            self.known.operator_acts = set(self.drains_running.values())
            self.known.placed_by_others = {
                n: h for n, h in self.known.placed_by_others.items()
                if now.servers.get(n, {}).get("host") != h}
            assert self.cloud.bmcs is not None
            self.known.held_late &= set(self.cloud.bmcs.power.shutting_down())
            self.known.forced_late = {     # the admin's race is over once the host is on
                n: h for n, h in self.known.forced_late.items()
                if n in now.servers and (now.hosts[h]["power"] == "off"
                                         or self._shutting_down(h))}
        return self.fresh()

    def fresh(self) -> list[inv.Violation]:
        """The violations recorded since the last call (the watcher's during a step, a
        rollback's, the checks'), each handed out once."""
        with self._watch_lock:
            out = self.violations[self._reported:]
            self._reported = len(self.violations)
        return out


def reported_left(result: Result, target: dict[str, str]) -> set[str]:
    """The servers a rollback's output names as left where they are: in a note, or in
    its summary's "NAME: why" lines (skipped or failed)."""
    lines = [ln for ln in result.err.splitlines() if "note" in ln.lower()]
    lines += [ln for ln in result.out.splitlines() if re.match(r"^\s{2}\S+: ", ln)]
    return {name for name in target if any(re.search(rf"\b{re.escape(name)}\b", ln)
                                           for ln in lines)}
