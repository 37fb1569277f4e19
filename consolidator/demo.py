"""consolidator demo: the whole story on the bundled fake cloud, every step verified.

The fake cloud and its emulated BMCs run in a child process (a pyghmi client and BMC hang
when they share one process); the story runs here, through the functions the CLI uses:
snapshot, plan, approve, apply, power-off over IPMI and Redfish, the saving, the hosts,
rollback and a final check that the cloud is back as the snapshot recorded it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from functools import partial
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from consolidator.app.apply import apply_plan
from consolidator.app.bmcs import bmc_address, listed_bmcs
from consolidator.app.context import AppContext
from consolidator.app.database import upgrade_database
from consolidator.app.fake_cloud import stop_fake_cloud
from consolidator.app.hosts import host_rows
from consolidator.app.planning import PlanRequest, make_plan
from consolidator.app.review import approve, show_plan
from consolidator.app.rollback import prepare_rollback
from consolidator.app.snapshots import read_cloud, record_snapshot
from consolidator.core.errors import ConsolidatorError
from consolidator.core.model import Cluster
from consolidator.core.wording import agree, plural, state_phrase
from consolidator.render import table
from consolidator.render.hosts import live_hosts, snapshot_hosts
from consolidator.render.plan import render_plan, saving_summary

if TYPE_CHECKING:
    from consolidator.app.apply import Outcome
    from consolidator.app.snapshots import Snapshot

Echo = Callable[[str], None]

CLOUD_NAME = "consolidator-demo"
#: Fake-cloud settings that make the story quick: near-instant migrations, hosts whose
#: nova-compute comes up soon after power-on, BMCs that shut down gracefully at once.
FAST_SETTINGS: dict[str, Any] = {"migration_bandwidth_mb_s": 40000.0,
                                 "service_up_delay_s": 0.2, "bmc_graceful_delay_s": 0.1}
#: The executor's timings for the demo (the INI config it writes for itself).
DEMO_CONFIG = """\
[cloud]
name = {cloud}

[executor]
migration_timeout = 60
power_timeout = 60
lease_ttl = 30

[power]
bmc_file = {bmc_file}
"""
#: Seconds the cloud may take to start without a sign of progress (--start-timeout): the
#: fake starts in about a second; the real Nova (--backend nova) boots the scenario's 203
#: servers first (176 s on a quiet 2-core machine, far longer on a loaded one), saying how
#: the boot goes, and each progress line restarts its clock.
START_TIMEOUT_S = {"fake": 30.0, "nova": 600.0}
#: Seconds of silence from a starting cloud after which the demo says it is still starting.
STILL_STARTING_S = 30.0


class DemoError(ConsolidatorError):
    """A demo step that did not verify: "step N (name): what was wrong"."""


class StepFailed(Exception):
    """A check inside a step that did not hold."""


def check(condition: bool, message: str) -> None:
    """Fail the current step with message unless condition holds."""
    if not condition:
        raise StepFailed(message)


def bundled_scenario() -> Path:
    """The scenario the demo serves: the package's alto-cloud.yaml (paper 004's cloud)."""
    return Path(str(resources.files("consolidator") / "data" / "alto-cloud.yaml"))


@dataclass(frozen=True)
class DemoOptions:
    """What the operator asked of the demo."""

    algorithm: str | None = None
    ranking: str | None = None
    keep: bool = False
    db_url: str | None = None
    backend: str = "fake"
    #: Seconds the cloud may start without progress (None: START_TIMEOUT_S's).
    start_timeout: float | None = None
    #: The terminal's width its tables are fitted to (0: as they are).
    width: int = 0


@dataclass
class Served:
    """The fake cloud child process and the files it wrote."""

    process: subprocess.Popen[bytes]
    scenario: dict[str, Any]
    clouds_yaml: Path
    bmc_yaml: Path
    log: Path

    @property
    def auth_url(self) -> str:
        """The Keystone URL in the clouds.yaml it wrote."""
        entry = yaml.safe_load(self.clouds_yaml.read_text())["clouds"][CLOUD_NAME]
        return str(entry["auth"].get("auth_url") or entry["compute_endpoint_override"])


class StartWatch:
    """When a starting cloud has gone `limit` seconds without progress (each progress line
    restarts the clock, so the deadline scales with the scenario and the machine's load),
    and when to say it is still starting."""

    def __init__(self, limit: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.limit, self.clock = limit, clock
        self.started = self.progress_at = self.said_at = clock()

    def progressed(self) -> None:
        """A progress line came."""
        self.progress_at = self.said_at = self.clock()

    def expired(self) -> bool:
        """No progress for `limit` seconds."""
        return self.clock() - self.progress_at > self.limit

    def still_starting(self) -> str | None:
        """'still starting (95 s)' after STILL_STARTING_S of silence, else None."""
        now = self.clock()
        if now - self.said_at < STILL_STARTING_S:
            return None
        self.said_at = now
        return f"still starting ({now - self.started:.0f} s)"


def _relay(watch: StartWatch, echo: Echo, line: str) -> None:
    watch.progressed()
    echo(line)


def last_word(output: str) -> str:
    """A served cloud's last line of output, without its own 'consolidator: error: ' (the
    demo's line that quotes it begins with one)."""
    lines = output.strip().splitlines()
    if not lines:
        return "no output"
    line = lines[-1]
    for prefix in ("consolidator: error: ", "consolidator: "):
        if line.startswith(prefix):
            return line[len(prefix):]
    return line


def served_name(backend: str) -> str:
    """What the demo starts: the project's fake cloud, or the real Nova."""
    return "the real Nova and Placement" if backend == "nova" else "the fake cloud"


@contextmanager
def served_fake_cloud(workdir: Path, backend: str = "fake", echo: Echo | None = None,
                      start_timeout: float | None = None) -> Iterator[Served]:
    """Serve a fast copy of the bundled scenario with BMCs in a child process until exit:
    the project's fake cloud, or (backend nova) the real Nova and Placement."""
    doc = yaml.safe_load(bundled_scenario().read_text(encoding="utf-8"))
    doc["settings"] = {**(doc.get("settings") or {}), **FAST_SETTINGS}
    scenario = workdir / "scenario.yaml"
    scenario.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    clouds_yaml, bmc_yaml, log = (workdir / "clouds.yaml", workdir / "bmc.yaml",
                                  workdir / "fake-cloud.log")
    args = [sys.executable, "-m", "consolidator", "fake-cloud", "serve", "--scenario",
            str(scenario), "--bmc", "--write-clouds-yaml", str(clouds_yaml), "--cloud-name",
            CLOUD_NAME, "--write-bmc-yaml", str(bmc_yaml)]
    if backend == "nova":
        args += ["--backend", "nova", "--migration-seconds", "0.5",
                 "--log-file", str(workdir / "nova.log")]
    with log.open("wb") as out:
        # A session of its own: Ctrl-C reaches the demo, which then stops the child itself.
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    limit = START_TIMEOUT_S[backend] if start_timeout is None else start_timeout
    try:
        watch = StartWatch(limit)
        relayed = 0
        while not (clouds_yaml.exists() and bmc_yaml.exists()):
            if echo is not None:   # the real Nova's start-up takes minutes: say how it goes
                relayed = relay_progress(log, relayed, partial(_relay, watch, echo))
                still = watch.still_starting()
                if still is not None:
                    echo(f"  {served_name(backend)}: {still}")
            if process.poll() is not None:
                raise StepFailed(f"{served_name(backend)} did not start: "
                                 f"{last_word(log.read_text(errors='replace'))}")
            if watch.expired():
                raise StepFailed(f"{served_name(backend)} did not start: no progress in "
                                 f"{limit:g} s (a loaded machine needs more: give "
                                 f"--start-timeout SECONDS)")
            time.sleep(0.05)
        yield Served(process, doc, clouds_yaml, bmc_yaml, log)
    finally:
        stop_fake_cloud(process)


def relay_progress(log: Path, relayed: int, echo: Echo) -> int:
    """Echo the start-up lines of the log beyond the first `relayed` ('nova control plane
    ... up', 'booted 40 of 203 servers (61 s)'); how many lines there are now."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return relayed
    for line in lines[relayed:]:
        if line.startswith(("booted ", "nova control plane")):
            echo(f"  {line}")
    return len(lines)


@contextmanager
def cloud_environment(clouds_yaml: Path) -> Iterator[None]:
    """Point openstacksdk at the demo's clouds.yaml only; restore the environment after."""
    saved = dict(os.environ)
    for key in [k for k in os.environ if k.startswith("OS_")]:
        del os.environ[key]
    os.environ["OS_CLIENT_CONFIG_FILE"] = str(clouds_yaml)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


class Story:
    """Numbered, timed steps; a step that raises becomes one DemoError naming it."""

    def __init__(self, echo: Echo) -> None:
        self.echo = echo
        self.number = 0
        self.started = time.monotonic()

    @contextmanager
    def step(self, title: str) -> Iterator[None]:
        """Run one step under a numbered heading."""
        self.number += 1
        heading = f"{self.number}. {title}"
        self.echo(f"\n{heading}\n{'=' * len(heading)}")
        began = time.monotonic()
        try:
            yield
        except (KeyboardInterrupt, DemoError):
            raise
        except (StepFailed, ConsolidatorError) as exc:
            raise DemoError(f"demo failed at step {self.number} ({title}): {exc}") from None
        except Exception as exc:  # noqa: BLE001 - one line naming the step, whatever broke
            raise DemoError(f"demo failed at step {self.number} ({title}): "
                            f"{type(exc).__name__}: {exc}") from None
        self.echo(f"-> verified ({time.monotonic() - began:.1f} s)")


def run_demo(options: DemoOptions, echo: Echo) -> float:
    """Run the whole story; return its seconds. Raises DemoError naming a failed step."""
    story = Story(echo)
    workdir = Path(tempfile.mkdtemp(prefix="consolidator-demo-"))
    try:
        with ExitStack() as stack:
            with story.step(f"Start {served_name(options.backend)} and the emulated BMCs"
                            if options.backend == "nova" else
                            "Start the fake cloud and its emulated BMCs"):
                if options.backend == "nova":
                    echo("booting the scenario's servers on the real Nova takes minutes (176 s "
                         "on a quiet 2-core machine, longer on a loaded one); the whole "
                         "story about ten")
                served = stack.enter_context(served_fake_cloud(
                    workdir, options.backend, echo, options.start_timeout))
                _show_cloud(served, echo, options.backend)
            stack.enter_context(cloud_environment(served.clouds_yaml))
            _story(story, served, workdir, options, echo)
    finally:
        if options.keep:
            echo("")
            for line in kept_lines(workdir, options):
                echo(line)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return time.monotonic() - story.started


def kept_lines(workdir: Path, options: DemoOptions) -> list[str]:
    """What --keep kept, and where the database is: in the directory, or the one --db-url
    (or CONSOLIDATOR_DB_URL) names, its password hidden."""
    from consolidator.app.database import redact

    logs = f"fake-cloud.log{', nova.log' if options.backend == 'nova' else ''}"
    first = (f"kept {workdir}: {'' if options.db_url else 'the database (demo.db), '}"
             f"clouds.yaml, bmc.yaml, the config (consolidator.conf) and the log of "
             f"{served_name(options.backend)} ({logs})")
    if options.db_url:
        return [first, f"  the demo's plans, journal and snapshots are in the database "
                       f"--db-url names: {redact(options.db_url)}"]
    return [first, f"  look around with: consolidator --config {workdir}/consolidator.conf "
                   f"plans list   (or journal, snapshots list)"]


def cloud_heading(backend: str) -> str:
    """What serves the demo's cloud: the project's fake, or the real Nova (no Keystone)."""
    if backend == "nova":
        return "real Nova and Placement (fake virt driver, no Keystone)"
    return "fake Keystone, Nova and Placement"


def _show_cloud(served: Served, echo: Echo, backend: str = "fake") -> None:
    doc = served.scenario
    bmcs = listed_bmcs(served.bmc_yaml)
    echo(f"{cloud_heading(backend)} at {served.auth_url} (child process "
         f"{served.process.pid}), serving {plural(len(doc['hosts']), 'host')} and "
         f"{plural(len(doc['instances']), 'instance')} shaped like paper 004's cloud")
    echo(table(["HOST", "BMC", "LISTENS AT"],
               [list(row) for row in bmcs], align="lll"))
    wanted = {h["name"] for h in doc["hosts"] if h.get("bmc")}
    listed = {row[0] for row in bmcs}
    check(listed == wanted, f"bmc.yaml lists {sorted(listed)}, expected {sorted(wanted)}")


def _story(story: Story, served: Served, workdir: Path, options: DemoOptions,
           echo: Echo) -> None:
    """Steps 2 to 11, against the served cloud."""
    bmc_file = str(served.bmc_yaml)
    config = workdir / "consolidator.conf"
    db_url = options.db_url or f"sqlite:///{workdir / 'demo.db'}"
    text = DEMO_CONFIG.format(cloud=CLOUD_NAME, bmc_file=bmc_file)
    if not options.db_url:
        text += f"\n[database]\nurl = {db_url}\n"
    config.write_text(text, encoding="utf-8")
    app = AppContext(config_file=str(config), db_url=options.db_url, cloud=CLOUD_NAME,
                     bmc_file=bmc_file, report=lambda line: echo(f"  {line}"))

    with story.step("Prepare the database (db upgrade)"):
        before, after, where = upgrade_database(app)
        echo(f"database {where}: {before or 'empty'} -> revision {after}")

    with story.step("Snapshot the cloud"):
        snap, _ = record_snapshot(app)
        echo(f"snapshot {snap.info.id}: {plural(snap.info.host_count, 'host')} and "
             f"{plural(snap.info.instance_count, 'instance')} read through openstacksdk")
        echo(snapshot_hosts(snap.cluster, width=options.width))
        check(snap.info.host_count == len(served.scenario["hosts"]),
              f"read {plural(snap.info.host_count, 'host')}, the scenario has "
              f"{len(served.scenario['hosts'])}")
        check(snap.info.instance_count == len(served.scenario["instances"]),
              f"read {plural(snap.info.instance_count, 'instance')}, the scenario has "
              f"{len(served.scenario['instances'])}")

    with story.step("Plan"):
        plan = make_plan(app, snap, PlanRequest(algorithm=options.algorithm,
                                                ranking=options.ranking))
        plan_id, draft = plan.id, plan.draft
        echo(render_plan(plan, snap.cluster, approve_hint=False, width=options.width))
        check(bool(draft.migrations) and bool(draft.power_off),
              f"plan {plan_id} frees no host ({plural(len(draft.migrations), 'migration')}, "
              f"{plural(len(draft.power_off), 'host')} to power off)")

    with story.step("Approve the plan"):
        approve(app, plan_id, reason="approved by the demo")
        status = show_plan(app, plan_id)[0].status
        echo(f"plan {plan_id} {state_phrase(status)} (an operator runs: consolidator plan approve "
             f"{plan_id})")
        check(status == "approved", f"plan {plan_id} {state_phrase(status)}, not approved")

    with story.step("Apply: live-migrate, disable and power off the emptied hosts"):
        outcome = apply_plan(app, plan_id)
        _check_outcome(outcome, f"plan {plan_id}")
        check(set(outcome.powered_off) == set(draft.power_off),
              f"powered off {sorted(outcome.powered_off)}, the plan said "
              f"{sorted(draft.power_off)}")
        status = show_plan(app, plan_id)[0].status
        check(status == "succeeded", f"plan {plan_id} ended {status}")

    with story.step("The hosts powered off, asked of their BMCs over IPMI and Redfish"):
        lookup = app.power_lookup()
        rows = []
        for host in draft.power_off:
            driver = lookup(host)
            check(driver is not None, f"{host} has no BMC in {bmc_file}")
            assert driver is not None
            rows.append([host, driver.config.driver, bmc_address(driver.config),  # type: ignore[attr-defined]
                         driver.power_state()])
        echo(table(["HOST", "DRIVER", "BMC", "POWER"], rows, align="llll"))
        drivers = sorted({r[1] for r in rows})
        echo(f"{plural(len(rows), 'host')} powered off through {' and '.join(drivers)}")
        off = [r[0] for r in rows if r[3] != "off"]
        check(not off, f"the BMC of {', '.join(off)} does not report power off")

    with story.step("The estimated saving"):
        echo(saving_summary(draft, len(outcome.powered_off)))
        check(draft.watts_saved > 0, "the plan saves nothing")

    with story.step("consolidator hosts list"):
        rows_by_host = {r["host"]: r for r in host_rows(app)}
        echo(live_hosts(list(rows_by_host.values())))
        for host, row in rows_by_host.items():
            want = "off" if host in draft.power_off else "on"
            check(row["power"] == want, f"{host} is {row['power']}, expected {want}")
            if want == "off":
                check(row["instances"] == 0 and row["service"].startswith("disabled"),
                      f"{host} is off but has {plural(row['instances'], 'instance')} and "
                      f"service {row['service']}")

    with story.step("Roll back to the snapshot"):
        prepared = prepare_rollback(app, snap.info.id)
        for note in prepared.notes:
            echo(f"note: {note}")
        check(prepared.plan_id is not None, "the rollback found nothing to undo")
        assert prepared.plan is not None
        back = prepared.plan.id
        echo(render_plan(prepared.plan, prepared.live, approve_hint=False,
                         width=options.width))
        approve(app, back, reason=f"rollback to snapshot {snap.info.id}")
        outcome = apply_plan(app, back)
        _check_outcome(outcome, f"rollback plan {back}")
        check(set(outcome.powered_on) == set(draft.power_off),
              f"powered on {sorted(outcome.powered_on)}, expected {sorted(draft.power_off)}")

    with story.step("Final check: every instance back home, every host on"):
        _final_check(app, snap, echo)


def _check_outcome(outcome: Outcome, what: str) -> None:
    problems = [f"{n}: {why}" for n, why in [*outcome.failed.items(), *outcome.skipped.items(),
                                             *outcome.left_on.items()]]
    if outcome.interrupted:
        problems.insert(0, "interrupted")
    more = f" (and {len(problems) - 2} more)" if len(problems) > 2 else ""
    check(outcome.ok, f"{what} did not finish: {'; '.join(problems[:2])}{more}")


def _final_check(app: AppContext, snap: Snapshot, echo: Echo) -> None:
    live = read_cloud(app).cluster
    where = {i.id: i for i in live.instances}
    away = [f"{i.name} on {where[i.id].host if i.id in where else 'nowhere'}, "
            f"not {i.host}" for i in snap.cluster.instances
            if i.id not in where or where[i.id].host != i.host
            or where[i.id].status != i.status]
    check(not away, f"{plural(len(away), 'instance')} "
                    f"{agree(len(away), 'is', 'are')} not back: {'; '.join(away[:3])}")
    echo(f"all {plural(len(snap.cluster.instances), 'instance')} are on the host the "
         f"snapshot recorded "
         f"them on, in the state it recorded")
    down = _hosts_not_on(live, app.power_lookup())
    check(not down, f"hosts not back on and enabled: {'; '.join(down)}")
    echo(f"all {plural(len(live.hosts), 'host')} are powered on (asked of their BMCs), their "
         f"nova-compute enabled and up")
    again = prepare_rollback(app, snap.info.id)
    check(again.plan_id is None, "a second rollback still finds something to do")
    echo(f"a second rollback to snapshot {snap.info.id} finds nothing to do")


def _hosts_not_on(live: Cluster, lookup: Callable[[str], Any]) -> list[str]:
    down = []
    for host in live.hosts:
        driver = lookup(host.name)
        power = driver.power_state() if driver is not None else host.power
        if power != "on" or host.status != "enabled" or host.state != "up":
            down.append(f"{host.name} ({power}, {host.status}/{host.state})")
    return down
