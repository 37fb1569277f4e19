"""A small fake cloud with every consolidator actor and fault at hand, for the safety tests.

``World`` serves six hosts (Redfish BMCs, all on 127.0.0.1) from an in-process FakeCloud,
keeps a migrated SQLite database and a config (short lease, fast migrations, a webhook, the
fake's Prometheus endpoint), and offers each actor as a method: the consolidator commands run
in this process through ``consolidator.cli.main`` (cheap), an apply that a signal is meant for
runs as a subprocess. After each step ``observe()`` checks the invariants of
tests/functional/safety_invariants.py and returns what broke.
"""

from __future__ import annotations

import atexit
import io
import logging
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
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
from tests.functional.safety_webhook import Webhook

HOSTS = ("c1", "c2", "c3", "c4", "c5", "c6")
OUT_OF_SCOPE = frozenset({"c5"})          # az east; the config's scope is az west
EXCLUDED = frozenset({"c6"})              # [planner] excluded_hosts
PINNED = frozenset({"p0"})                # consolidator:exclude=true
LEASE_TTL = 2.0
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


def _template_db() -> Path:
    """A migrated database, made once per process (removed at its exit) and copied for
    each world."""
    if "db" not in _TEMPLATE:
        from consolidator.store.db import make_engine, upgrade

        folder = tempfile.mkdtemp(prefix="safety-template-")
        atexit.register(shutil.rmtree, folder, True)
        path = Path(folder) / "template.db"
        engine = make_engine(f"sqlite:///{path}")
        upgrade(engine)
        engine.dispose()
        _TEMPLATE["db"] = path
    return _TEMPLATE["db"]


class World:
    """The cloud, the database, the config, and every actor and fault of issue 33."""

    def __init__(self, tmp: Path, *, log: Any = None) -> None:
        self.tmp = Path(tmp)
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.say = log or (lambda line: None)
        self.cloud = FakeCloud(parse_scenario(scenario()), bmc=True,
                               migration_bandwidth_mb_s=4096.0, service_up_delay_s=0.05,
                               bmc_graceful_delay_s=0.1)
        self.webhook = Webhook()
        self.db = self.tmp / "c.db"
        self.known = inv.Known(servers=set(START), out_of_scope=OUT_OF_SCOPE,
                               excluded=EXCLUDED, pinned=PINNED)
        self.background: list[subprocess.Popen[bytes]] = []
        self.stopped: list[subprocess.Popen[bytes]] = []
        self.locks: list[threading.Thread] = []
        self.faults: Counter[str] = Counter()
        self.actions: Counter[str] = Counter()
        self.violations: list[inv.Violation] = []
        self._seen: set[str] = set()
        #: Each recorded snapshot: its id, where each server was, and the servers the admin
        #: or a user moved or created since (a rollback to it leaves those alone).
        self.snapshots: list[tuple[str, dict[str, str], set[str]]] = []
        self.plans: list[str] = []
        self.created = 0
        self.paused_at = 0.0
        self.overloaded = False
        self.last: inv.Facts | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> World:
        """Serve the cloud and the webhook; write the files; take the first snapshot."""
        self.cloud.start()
        self.webhook.start()
        shutil.copy(_template_db(), self.db)
        clouds = self.cloud.write_clouds_yaml(self.tmp / "clouds.yaml")
        bmc = self.cloud.write_bmc_yaml(self.tmp / "bmc.yaml")
        doc = yaml.safe_load(bmc.read_text())
        doc["defaults"]["timeout"] = 3     # a vanished BMC costs seconds, not half a minute
        write_private_yaml(bmc, doc)
        self.env = {"OS_CLIENT_CONFIG_FILE": str(clouds), "CONSOLIDATOR_BMC_FILE": str(bmc),
                    "CONSOLIDATOR_DB_URL": f"sqlite:///{self.db}", "OS_CLOUD": "fake"}
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
power_timeout = 8
lease_ttl = {LEASE_TTL}
migration_timeout = 20
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
        return self

    def stop(self) -> None:
        """End every process and thread this world started, then the cloud."""
        for proc in self.stopped:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
        for proc in self.background:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.webhook.stopping = True
        for thread in self.locks:
            thread.join()
        self.webhook.stop()
        self.cloud.stop()

    def __enter__(self) -> World:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- running commands --------------------------------------------------------------

    def cli(self, *args: str, at_prompt: Any = None) -> Result:
        """Run one consolidator command in this process; at_prompt runs when it asks."""
        from consolidator.cli import main

        out, err = io.StringIO(), io.StringIO()
        stdin = sys.stdin
        sys.stdin = _Answer(at_prompt)
        try:
            with self._as_operator(), redirect_stdout(out), redirect_stderr(err):
                code = main(["--config", str(self.config), *args])
        finally:
            sys.stdin = stdin
        self.actions[args[0] if args[0] not in ("hosts", "plan") else " ".join(args[:2])] += 1
        self.say(f"$ consolidator {' '.join(args)} -> {code}")
        return Result(code, out.getvalue(), err.getvalue())

    @contextmanager
    def _as_operator(self) -> Iterator[None]:
        """This world's environment (clouds.yaml, BMC file, database) for a command run in
        this process; the caller's environment and logging are restored after it."""
        saved = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)
        root = logging.getLogger()
        handlers, level = root.handlers[:], root.level
        try:
            yield
        finally:
            root.handlers[:], root.level = handlers, level
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value

    def spawn(self, *args: str) -> subprocess.Popen[bytes]:
        """Run one consolidator command as a subprocess (for the signals)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        env.update(self.env)
        env["PYTHONPATH"] = os.pathsep.join(p for p in [str(Path(__file__).parents[2]),
                                                        env.get("PYTHONPATH", "")] if p)
        log = (self.tmp / f"bg-{len(self.background)}.log").open("wb")
        proc = subprocess.Popen([sys.executable, "-m", "consolidator", "--config",
                                 str(self.config), *args], stdout=log, stderr=log, env=env)
        log.close()
        self.background.append(proc)
        self.actions[f"{args[0]} (subprocess)"] += 1
        self.say(f"$ consolidator {' '.join(args)} & (pid {proc.pid})")
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
            self.record(inv.rollback_incomplete(target, now, self.known, reported))
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
        with self._as_operator():
            ctx = AppContext(config_file=str(self.config), cloud="fake",
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
        """hosts drain HOST [--power-off] --yes; a drain that finished protects the host."""
        result = self.cli("hosts", "drain", host, *(["--power-off"] if power_off else []),
                          "--yes")
        if result.code == 0:
            self.known.drained.add(host)
        return result

    def undrain(self, host: str) -> Result:
        """hosts undrain HOST (the operator's own wish: the host is no longer drained)."""
        was = host in self.known.drained
        self.known.drained.discard(host)
        result = self.cli("hosts", "undrain", host)
        if result.code != 0 and was and self.facts().hosts[host]["status"] == "disabled":
            self.known.drained.add(host)
        return result

    def hosts_power(self, action: str, host: str) -> Result:
        """hosts power on|off HOST."""
        extra = ["--yes", "--force"] if action == "off" else []
        if action == "on":
            self.known.asked_on.add(host)
        return self.cli("hosts", "power", action, host, *extra)

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
            with urllib.request.urlopen(req, timeout=10) as resp:
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

    def operator_service(self, host: str, enable: bool) -> int:
        """The operator disables (with a reason of their own: held) or enables a host
        through Nova's os-services API; an enable ends a hold or a drain (the gate reads the
        live service, as Nova's scheduler does)."""
        service = self.cloud.state.hosts[host].service_id
        mark = max((r.id for r in self.facts().journal), default=0)
        body: dict[str, Any] = {"status": "enabled"} if enable else {
            "status": "disabled", "disabled_reason": "DIMM errors: RMA, keep off"}
        status = self._nova("PUT", f"/os-services/{service}", body)
        self.actions["operator enable" if enable else "operator disable"] += 1
        self.say(f"operator {'enables' if enable else 'disables'} {host} -> {status}")
        if status == 200:
            if not enable:      # a migration already under way may still land there
                for name in self.migrating_to(host):
                    self.known.placed_by_others[name] = host
            self.known.operator_status[host] = ("enabled" if enable else "disabled", mark)
            if enable:      # the operator ends a hold, or a drain, through Nova too
                self.known.held.discard(host)
                self.known.drained.discard(host)
            else:
                self.known.held.add(host)
        return status

    def admin_migrate(self, server: str, dest: str) -> int:
        """An admin's forced live migration (2.30, force: no scheduler checks)."""
        rec = self.cloud.state.server(server)
        if rec is None:
            return 404
        status = self._nova("POST", f"/servers/{rec.id}/action", {"os-migrateLive": {
            "host": dest, "block_migration": "auto", "force": True}}, "2.30")
        self.actions["admin migrate"] += 1
        self.say(f"admin migrates {server} to {dest} -> {status}")
        if status == 202:
            self.known.placed_by_others[server] = dest
            self.by_others(server)
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
        try:
            urllib.request.urlopen(req, timeout=10).close()
        except urllib.error.HTTPError:
            return False
        self.known.servers.add(name)
        self.known.placed_by_others[name] = host
        self.by_others(name)
        self.say(f"user creates {name} on {host}")
        return True

    def delete_server(self, name: str) -> bool:
        """A user deletes a server."""
        import urllib.error
        import urllib.request

        req = urllib.request.Request(f"{self.cloud.base_url}/_fake/servers/{name}",
                                     method="DELETE")
        self.actions["delete server"] += 1
        try:
            urllib.request.urlopen(req, timeout=10).close()
        except urllib.error.HTTPError:
            return False
        self.known.servers.discard(name)
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
        """SIGCONT every stopped command, once it slept past the lease ttl."""
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
        """Graceful shutdowns take this long from now on (past the lease when > ttl)."""
        assert self.cloud.bmcs is not None
        self.cloud.bmcs.power.graceful_delay_s = seconds
        self.faults["slow graceful shutdown"] += 1
        self.say(f"fault: graceful shutdowns take {seconds} s")

    def clear_faults(self) -> None:
        """Every BMC and HTTP fault ends; shutdowns are fast again."""
        self.cloud.clear_faults()
        assert self.cloud.bmcs is not None
        self.cloud.bmcs.power.graceful_delay_s = 0.1
        self.say("faults cleared")

    def db_lock(self, seconds: float = LEASE_TTL + 1.0) -> None:
        """Another writer holds the SQLite file (BEGIN EXCLUSIVE) for this long."""
        ready = threading.Event()

        def hold() -> None:
            conn = sqlite3.connect(self.db, timeout=60, isolation_level=None)
            try:
                conn.execute("BEGIN EXCLUSIVE")
                ready.set()
                time.sleep(seconds)
                conn.execute("ROLLBACK")
            finally:
                ready.set()
                conn.close()

        thread = threading.Thread(target=hold, daemon=True)
        thread.start()
        ready.wait(60)
        self.locks.append(thread)
        self.faults["database lock"] += 1
        self.say(f"fault: the database is locked for {seconds} s")

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
        return inv.Facts.read(self.cloud.state.summary(), str(self.db))

    def settle(self, timeout: float = 180.0) -> bool:
        """Wait for the background commands, migrations, shutdowns and locks to end (a
        stopped command is woken first); True if all did. The deadline is generous: a
        command that waited out a lock (SQLite's 30 s busy timeout) still has its safety
        steps to take, on a loaded machine too; only a hang reaches it."""
        self.resume_paused()
        deadline = time.monotonic() + timeout
        assert self.cloud.bmcs is not None
        while time.monotonic() < deadline:
            busy = (self.running() or self.facts().migrating
                    or self.cloud.bmcs.power.shutting_down()
                    or any(t.is_alive() for t in self.locks))
            if not busy:
                self.locks = []
                return True
            time.sleep(0.05)
        return False

    def record(self, found: list[inv.Violation]) -> list[inv.Violation]:
        """Keep the violations not seen before; return them."""
        new = [v for v in found if str(v) not in self._seen]
        for v in new:
            self._seen.add(str(v))
            self.say(f"VIOLATION {v}")
        self.violations += new
        return new

    def observe(self, *, settle: bool = False) -> list[inv.Violation]:
        """Check every invariant against the state before the step; the new violations."""
        settled = self.settle() if settle else not (self.running() or self.facts().migrating)
        now = self.facts()
        assert self.last is not None
        found = self.record(inv.check_step(self.last, now, self.known, settled=settled))
        self.last = now
        self.known.asked_on = set()
        self.known.placed_by_others = {
            n: h for n, h in self.known.placed_by_others.items()
            if now.servers.get(n, {}).get("host") != h}
        return found


def reported_left(result: Result, target: dict[str, str]) -> set[str]:
    """The servers a rollback's output names as left where they are: in a note, or in
    its summary's "NAME: why" lines (skipped or failed)."""
    lines = [ln for ln in result.err.splitlines() if "note" in ln.lower()]
    lines += [ln for ln in result.out.splitlines() if re.match(r"^\s{2}\S+: ", ln)]
    return {name for name in target if any(re.search(rf"\b{re.escape(name)}\b", ln)
                                           for ln in lines)}
