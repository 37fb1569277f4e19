"""The safety invariants of issue 33, checked on what the fake cloud and the journal show.

One observation (``Facts``: the fake cloud's hosts, servers and migrations, and the journal)
and what the driver of the cloud knows (``Known``: the servers that must exist, the hosts the
operator holds, the drained, out-of-scope and excluded hosts, what the operator and the admin
did themselves) go in; a list of ``Violation`` comes out, each named by its invariant. The
randomized test (tests/functional/test_safety_fuzz.py), its regressions and the long run
(tools/bench/safety_fuzz.py) all check with this module.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

#: Every invariant, in the order the tables print them.
INVARIANTS = (
    "off_host_holds_server",       # no powered-off host holds a server
    "instance_lost",               # no instance disappears that nobody deleted
    "instance_stuck",              # none is left in ERROR or MIGRATING once settled
    "protected_host_touched",      # held, drained, out-of-scope, excluded: not enabled,
                                   # powered on or given work by consolidator
    "two_actors",                  # never two lease holders acting at once (every lease of
                                   # the cloud, whatever name; migrations too), seen on the
                                   # watcher's one clock
    "journal_unexplained",         # every change of a host's service or power is journaled
    "rollback_incomplete",         # rollback restores what consolidator moved, may move
    "pinned_moved",                # consolidator never migrates a pinned server
    "migration_onto_off_host",     # no migration starts onto a host whose BMC reads off or
                                   # whose shutdown is pending
    "protected_host_disabled",     # no held, drained, out-of-scope or excluded host, nor one
                                   # the operator powered off, is disabled or powered off by
                                   # consolidator; no operator's disabled reason is replaced
    "recorded_state_mismatch",     # once settled, each recorded host state matches the cloud
    "idle_disabled_host",          # once settled, no host is left disabled, on and empty
)

#: Journal actions that change a host's service or its power.
SERVICE_ACTIONS = ("disable", "enable")
POWER_ACTIONS = ("power_off", "power_on")
ACTING = SERVICE_ACTIONS + POWER_ACTIONS + ("force_down", "unfence")


@dataclass(frozen=True)
class Violation:
    """One broken invariant, and what shows it."""

    invariant: str
    detail: str
    #: When it was seen: the step and the moment within it ("" between steps).
    at: str = ""

    @property
    def key(self) -> str:
        """What it is, without when: a violation seen again is not counted again."""
        return f"{self.invariant}: {self.detail}"

    def __str__(self) -> str:
        return self.key + (f" [{self.at}]" if self.at else "")


@dataclass(frozen=True)
class Row:
    """One journal row, as the invariants read it."""

    id: int
    plan_id: str | None
    action: str
    target: str
    params: dict[str, Any]
    state: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    result: str | None
    lease_holder: str | None
    lease_generation: int | None


@dataclass
class Facts:
    """One observation: the fake cloud's state (GET /_fake/state) and the journal."""

    hosts: dict[str, dict[str, Any]]
    servers: dict[str, dict[str, Any]]
    migrating: int
    journal: list[Row]

    @classmethod
    def read(cls, state: dict[str, Any], store: Any) -> Facts:
        """From the fake cloud's summary and the store (tests/functional/safety_store.py;
        or the path of a SQLite file)."""
        return cls.of(state, read_journal(store))

    @classmethod
    def of(cls, state: dict[str, Any], journal: list[Row]) -> Facts:
        """From the fake cloud's summary and journal rows already read."""
        migrating = sum(1 for m in state["migrations"]
                        if m["status"] in ("queued", "preparing", "running", "post-migrating"))
        return cls(hosts=state["hosts"], servers=state["servers"], migrating=migrating,
                   journal=journal)

    def where(self) -> dict[str, str]:
        """Each server's host."""
        return {name: s["host"] for name, s in self.servers.items()}


def read_journal(store: Any, since: int = 0) -> list[Row]:
    """Journal rows (with an id above `since`, or still running), oldest first, read without
    the product's code, from a store (safety_store.py) or a SQLite file's path."""
    if isinstance(store, str):
        conn = sqlite3.connect(f"file:{store}?mode=ro", uri=True, timeout=60)
        try:
            raw = conn.execute("SELECT id, plan_id, action, target, params, state, "
                               "created_at, started_at, finished_at, result, lease_holder, "
                               "lease_generation FROM journal WHERE id > ? OR "
                               "state = 'running' ORDER BY id", (since,)).fetchall()
        finally:
            conn.close()
    else:
        raw = store.journal(since)
    return [Row(r[0], r[1], r[2], r[3],
                r[4] if isinstance(r[4], dict) else json.loads(r[4] or "{}"), r[5],
                str(r[6]), None if r[7] is None else str(r[7]),
                None if r[8] is None else str(r[8]), r[9], r[10], r[11]) for r in raw]


@dataclass
class Known:
    """What the driver of the cloud knows, beside the cloud and the journal."""

    #: Servers that must exist (created and not deleted).
    servers: set[str] = field(default_factory=set)
    #: Hosts the operator disabled with a reason of their own ("held by the operator").
    held: set[str] = field(default_factory=set)
    #: Hosts a drain emptied and still keeps (until undrain).
    drained: set[str] = field(default_factory=set)
    #: Hosts outside [planner] scope, and [planner] excluded_hosts.
    out_of_scope: frozenset[str] = frozenset()
    excluded: frozenset[str] = frozenset()
    #: Pinned servers (consolidator:exclude=true), and servers of excluded projects.
    pinned: frozenset[str] = frozenset()
    #: host -> (status the operator set, journal id when they set it) for the last change.
    operator_status: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: Servers the admin moved or created since the last check, with their host.
    placed_by_others: dict[str, str] = field(default_factory=dict)
    #: Hosts the operator asked to power on ('hosts power on HOST') since the last check.
    asked_on: set[str] = field(default_factory=set)
    #: Hosts the operator acted on in the step under way (its own service or power change).
    operator_acts: set[str] = field(default_factory=set)
    #: Hosts the operator powered off ('hosts power off HOST'): held until 'hosts power on'.
    powered_off: set[str] = field(default_factory=set)
    #: The reason the operator gave each host they disabled (it must stay theirs).
    operator_reason: dict[str, str] = field(default_factory=dict)
    #: Servers an admin forced onto a host whose shutdown was already under way, and that
    #: host (the admin's race, not consolidator's doing), until the race is over.
    forced_late: dict[str, str] = field(default_factory=dict)
    #: Hosts the operator held while their BMC was already shutting them down at
    #: consolidator's request: that shutdown ending is the operator's race, until it ends.
    held_late: set[str] = field(default_factory=set)

    def protected(self) -> dict[str, str]:
        """Each host consolidator must not enable, power on or give work, and why."""
        out = {h: "excluded" for h in self.excluded}
        out.update({h: "out of scope" for h in self.out_of_scope})
        out.update({h: "drained" for h in self.drained})
        out.update({h: "held by the operator" for h in self.held})
        return out

    def kept_off(self) -> dict[str, str]:
        """Each host consolidator must not disable or power off, and why: the protected
        ones, and those the operator powered off themselves."""
        out = self.protected()
        out.update({h: "powered off by the operator" for h in self.powered_off
                    if h not in out})
        return out


def off_host_holds_server(now: Facts, known: Known | None = None) -> list[Violation]:
    """No powered-off host holds a server (but one the admin forced onto it while its
    shutdown was already under way)."""
    late = known.forced_late if known is not None else {}
    return [Violation("off_host_holds_server",
                      f"{host} is off and holds {', '.join(sorted(on))}")
            for host, rec in sorted(now.hosts.items()) if rec["power"] == "off"
            for on in [[n for n, s in now.servers.items() if s["host"] == host
                        and late.get(n) != host]] if on]


def instance_lost(now: Facts, known: Known) -> list[Violation]:
    """Every server that was not deleted still exists."""
    return [Violation("instance_lost", f"{name} is gone")
            for name in sorted(known.servers - set(now.servers))]


def instance_stuck(now: Facts) -> list[Violation]:
    """Once the cloud settled: no server in ERROR or MIGRATING."""
    return [Violation("instance_stuck", f"{name} is {s['status']} on {s['host']}")
            for name, s in sorted(now.servers.items())
            if s["status"] in ("ERROR", "MIGRATING") or s.get("task_state") == "migrating"]


def protected_host_touched(before: Facts, now: Facts, known: Known,
                           protected_before: set[str] | None = None) -> list[Violation]:
    """No held, drained, out-of-scope or excluded host was enabled, powered on or given
    work, except by the operator or the admin themselves (the operator's 'hosts power on
    HOST' may power that host on, not enable a drained or held one). Work counts as given
    to a host protected since before the step (protected_before, when known): one the
    operator drained or held in the step may still receive a migration started while it
    was enabled (Nova, and the fake cloud, refuse one to a disabled host), their race."""
    out = []
    for host, why in sorted(known.protected().items()):
        was, rec = before.hosts[host], now.hosts[host]
        by_operator = known.operator_status.get(host, ("", -1))[0] == "enabled"
        # Outside the scope or excluded, a host consolidator itself disabled ('hosts power
        # off') may be enabled again by it; a drained or held one may not.
        ours = why in ("excluded", "out of scope") and \
            (was.get("disabled_reason") or "").startswith("consolidator")
        if was["status"] == "disabled" and rec["status"] == "enabled" and not (
                by_operator or ours):
            out.append(Violation("protected_host_touched", f"{host} ({why}) was enabled"))
        if was["power"] == "off" and rec["power"] == "on" and host not in known.asked_on:
            out.append(Violation("protected_host_touched", f"{host} ({why}) was powered on"))
        came = sorted(n for n, s in now.servers.items() if s["host"] == host
                      and before.servers.get(n, {}).get("host") not in (None, host)
                      and known.placed_by_others.get(n) != host) \
            if protected_before is None or host in protected_before else []
        if came:
            out.append(Violation("protected_host_touched",
                                 f"{host} ({why}) was given {', '.join(came)}"))
    return out


#: Journal actions that act on the cloud, for two_actors: service, power and migrations.
TWO_ACTORS_ACTIONS = ACTING + ("migrate", "abort_migration", "force_complete")


@dataclass
class Seen:
    """When the watcher saw one journal row run, on its own clock: it began after
    `began_after` and by `began_by`, and ended after `ended_after` and by `ended_by`."""

    row: Row
    began_after: float
    began_by: float
    ended_after: float | None = None
    ended_by: float | None = None
    #: A migrate row: its migration was seen under way in the cloud.
    in_cloud: bool = False
    #: A disable, enable or power row: the cloud did not show its effect when the row was
    #: first seen (so the change, once seen, is its request landing).
    effect_pending: bool = False


class Timeline:
    """Every acting journal row (service, power, migration) of every lease holder, with when
    the watcher saw it begin and end: one clock for all processes, whatever theirs say."""

    def __init__(self) -> None:
        self.seen: dict[int, Seen] = {}
        self.last = 0.0
        self.reported: set[tuple[int, int]] = set()
        self.renewed: dict[tuple[str, str, str], float] = {}
        self.lease_pairs: set[tuple[str, ...]] = set()

    def update(self, at: float, rows: list[Row], migrating: frozenset[str] = frozenset(),
               services: dict[str, tuple[str, ...]] | None = None) -> None:
        """The journal rows read at `at` (the previous read was at self.last), the servers
        whose live migration the cloud shows under way then, and each host's service
        (status, disabled reason, BMC power: 'on', 'off' or 'going down') read then. A
        migrate row's act ends when its migration
        does in the cloud: a holder paused while it waited for one that ended long ago,
        woken up, closes its row late, and that late write is bookkeeping, not an act (the
        check of the lease guards its next act). Likewise a disable, enable or power row's
        act ends when the cloud shows its effect (a power-off's shutdown begun), if it did
        not when the row was first seen: a holder paused after Nova or the BMC answered,
        before it closed the row, acted in time."""
        for row in rows:
            if row.action not in TWO_ACTORS_ACTIONS or not row.lease_holder \
                    or row.state == "skipped":
                continue
            seen = self.seen.get(row.id)
            shows = _shows_effect(row, services)
            if seen is None:
                seen = self.seen[row.id] = Seen(row, self.last, at)
                seen.effect_pending = shows is False and row.state == "running"
            seen.row = row
            if seen.effect_pending and shows and seen.ended_by is None:
                seen.ended_after, seen.ended_by = self.last, at
            if row.action == "migrate" and seen.ended_by is None:
                if row.target in migrating:
                    seen.in_cloud = True
                elif seen.in_cloud:          # its migration has ended in the cloud
                    seen.ended_after, seen.ended_by = self.last, at
            if row.state != "running" and seen.ended_by is None:
                seen.ended_after, seen.ended_by = self.last, at
        self.last = at

    def update_leases(self, at: float, leases: list[tuple[str, str, str]], ttl: float
                      ) -> list[Violation]:
        """The executor leases read at `at` (name, holder, expiry as written): a lease whose
        row changed within the last `ttl` seconds (on the watcher's clock) is being renewed
        by a live holder. Two such leases of the cloud (under any names) held by two holders
        at once are two actors."""
        live = {}
        for name, holder, expires in leases:
            if not holder:          # released
                continue
            key = (name, holder, expires)
            if key not in self.renewed:
                self.renewed[key] = at
            if at - self.renewed[key] <= ttl:
                live[name] = holder
        out = []
        holders = sorted(set(live.values()))
        if len(holders) > 1:
            pair = tuple(holders)
            if pair not in self.lease_pairs:
                self.lease_pairs.add(pair)
                out.append(Violation("two_actors", "leases " + ", ".join(
                    f"{n} (holder {h})" for n, h in sorted(live.items()))
                    + " of one cloud are held at once"))
        return out

    def two_actors(self) -> list[Violation]:
        """A row of one lease holder that succeeded, while a row of another holder (of any
        lease of the cloud, whatever name it was taken under) surely began after it began
        and before it ended: two actors acted at once."""
        out = []
        done = [s for s in self.seen.values() if s.row.state == "succeeded"
                and s.ended_after is not None]
        for old in done:
            for new in self.seen.values():
                pair = (old.row.id, new.row.id)
                if (new.row.lease_holder != old.row.lease_holder and pair not in self.reported
                        and old.began_by <= new.began_after
                        and new.began_by <= (old.ended_after or 0.0)):
                    self.reported.add(pair)
                    out.append(Violation("two_actors", (
                        f"journal row {old.row.id} ({old.row.action} {old.row.target}, "
                        f"holder {old.row.lease_holder} gen {old.row.lease_generation}) ran "
                        f"until it succeeded while row {new.row.id} ({new.row.action} "
                        f"{new.row.target}, holder {new.row.lease_holder} gen "
                        f"{new.row.lease_generation}) began")))
        return out


def _shows_effect(row: Row, services: dict[str, tuple[str, ...]] | None) -> bool | None:
    """Whether the cloud shows a disable, enable or power row's effect (its host disabled
    with the row's reason, enabled, going down or off, on); None for another row, or
    unknown."""
    if services is None or row.target not in services or \
            row.action not in SERVICE_ACTIONS + POWER_ACTIONS:
        return None
    status, reason, *rest = services[row.target]
    power = rest[0] if rest else None
    if row.action in POWER_ACTIONS:
        if power is None:
            return None
        return power == "on" if row.action == "power_on" else power in ("off", "going down")
    if row.action == "enable":
        return status == "enabled"
    return status == "disabled" and reason == row.params.get("reason")


def _last(rows: list[Row], host: str, actions: tuple[str, ...]) -> Row | None:
    for row in reversed(rows):
        if row.target == host and row.action in actions and row.state != "skipped":
            return row
    return None


def journal_unexplained(before: Facts, now: Facts, known: Known) -> list[Violation]:
    """Every change of a host's power and service since `before` has a journal row that
    says so (and did not fail), or the operator made it; a powered-off host is never left
    enabled."""
    out = []
    for host, rec in sorted(now.hosts.items()):
        was = before.hosts[host]
        if rec["power"] != was["power"]:
            row = _last(now.journal, host, POWER_ACTIONS)
            want = "power_off" if rec["power"] == "off" else "power_on"
            if row is None or row.action != want or row.state == "failed":
                said = "nothing" if row is None else f"{row.action} {row.state} (row {row.id})"
                out.append(Violation("journal_unexplained",
                                     f"{host} went {rec['power']}; the journal says {said}"))
        op_status, op_mark = known.operator_status.get(host, ("", -1))
        row = _last(now.journal, host, SERVICE_ACTIONS)
        by_operator = op_status == rec["status"] and (row is None or op_mark >= row.id)
        if rec["status"] != was["status"]:
            want = "disable" if rec["status"] == "disabled" else "enable"
            by_us = row is not None and row.action == want and row.state != "failed" \
                and row.id > op_mark
            if not by_us and op_status != rec["status"]:
                said = "nothing" if row is None else f"{row.action} {row.state} (row {row.id})"
                out.append(Violation("journal_unexplained",
                                     f"{host} was {rec['status']}; the journal says {said}"))
        if rec["power"] == "off" and rec["status"] == "enabled" and not by_operator and (
                was["power"] != "off" or was["status"] != "enabled"):
            out.append(Violation("journal_unexplained",
                                 f"{host} is off and enabled (reason "
                                 f"{rec.get('disabled_reason')!r})"))
    return out


def rollback_incomplete(target: dict[str, str], now: Facts, known: Known,
                        left_alone: set[str]) -> list[Violation]:
    """After a rollback that reported success: every server of the snapshot that still
    exists, that may move (not pinned, not in left_alone: moved by the admin or a user, or
    named by the rollback as left where it is), and whose snapshot host is not protected,
    is on its snapshot host."""
    protected = known.protected()
    out = []
    for name, host in sorted(target.items()):
        if (name not in now.servers or name in known.pinned or name in left_alone
                or host in protected):
            continue
        if now.servers[name]["host"] != host:
            out.append(Violation("rollback_incomplete",
                                 f"{name} is on {now.servers[name]['host']}, the snapshot "
                                 f"had it on {host}"))
    return out


def pinned_moved(now: Facts, known: Known) -> list[Violation]:
    """Consolidator started no migration of a pinned server (consolidator:exclude=true)."""
    return [Violation("pinned_moved", f"journal row {r.id} migrates {r.params.get('instance')} "
                                      f"({r.state})")
            for r in now.journal if r.action == "migrate" and r.state != "skipped"
            and r.params.get("instance") in known.pinned]


def protected_host_disabled(before: Facts, now: Facts, known: Known) -> list[Violation]:
    """No host consolidator must keep its hands off (Known.kept_off) went from enabled to
    disabled or from on to off, but by the operator's own action on it (or a shutdown already
    under way when the operator held it: Known.held_late); no operator's disabled reason was
    replaced."""
    out = []
    for host, why in sorted(known.kept_off().items()):
        if host in known.operator_acts:
            continue
        was, rec = before.hosts[host], now.hosts[host]
        if was["status"] == "enabled" and rec["status"] == "disabled":
            out.append(Violation("protected_host_disabled",
                                 f"{host} ({why}) was disabled ({rec.get('disabled_reason')!r})"))
        if was["power"] == "on" and rec["power"] == "off" and host not in known.held_late:
            out.append(Violation("protected_host_disabled", f"{host} ({why}) was powered off"))
    for host, reason in sorted(known.operator_reason.items()):
        rec = now.hosts[host]
        if host not in known.operator_acts and rec["status"] == "disabled" \
                and rec.get("disabled_reason") != reason:
            out.append(Violation("protected_host_disabled",
                                 f"{host}: the operator's reason {reason!r} was replaced by "
                                 f"{rec.get('disabled_reason')!r}"))
    return out


def moment(before: Facts, now: Facts, known: Known) -> list[Violation]:
    """What a sample taken while a step runs can show (the others need the step's end)."""
    return (off_host_holds_server(now, known) + instance_lost(now, known)
            + protected_host_disabled(before, now, known))


#: Recorded host states (core/host_gate.py) and what the cloud must show once settled:
#: (power, service status); None: any. The others (powering off, emptying, ...) are steps
#: under way, which a settled world has none of.
SETTLED_STATES: dict[str, tuple[str | None, str | None]] = {
    "in service": ("on", "enabled"), "off": ("off", None), "held by the operator":
    (None, "disabled"), "drained": (None, "disabled")}


def recorded_state_mismatch(now: Facts, recorded: dict[tuple[str, str], str],
                            known: Known | None = None) -> list[Violation]:
    """Once settled: each host state consolidator recorded (per cloud name it was recorded
    under) is what the cloud shows. A settled state whose service status differs only as the
    operator set it through Nova themselves (held, or enabled: outside consolidator, which
    reads the live service for that) is theirs, not a record consolidator left wrong."""
    operator_set = {h: status for h, (status, _) in known.operator_status.items()} \
        if known is not None else {}
    out = []
    for (cloud, host), state in sorted(recorded.items()):
        rec = now.hosts.get(host)
        if rec is None:
            continue
        want = SETTLED_STATES.get(state)
        shows = f"{rec['power']}, {rec['status']}"
        if want is None:
            out.append(Violation("recorded_state_mismatch",
                                 f"{host} is recorded '{state}' under {cloud!r} once settled "
                                 f"(the cloud shows {shows})"))
        elif (want[0] not in (None, rec["power"])) or (want[1] not in (None, rec["status"])):
            if want[0] in (None, rec["power"]) and operator_set.get(host) == rec["status"]:
                continue
            out.append(Violation("recorded_state_mismatch",
                                 f"{host} is recorded '{state}' under {cloud!r}; the cloud "
                                 f"shows {shows}"))
    return out


def idle_disabled_host(now: Facts, known: Known) -> list[Violation]:
    """Once settled: no host is disabled, on and empty, but one the operator keeps so
    (held, drained, disabled by them)."""
    keeps = known.held | known.drained | {
        h for h, (status, _) in known.operator_status.items() if status == "disabled"}
    return [Violation("idle_disabled_host",
                      f"{host} is disabled, on and empty ({rec.get('disabled_reason')!r})")
            for host, rec in sorted(now.hosts.items())
            if rec["status"] == "disabled" and rec["power"] == "on" and host not in keeps
            and not any(s["host"] == host for s in now.servers.values())]


def check_settled(now: Facts, known: Known, recorded: dict[tuple[str, str], str]
                  ) -> list[Violation]:
    """The invariants of a world the operator settled (nothing runs, the daemon is quiet)."""
    return (instance_stuck(now) + recorded_state_mismatch(now, recorded, known)
            + idle_disabled_host(now, known))


def check_step(before: Facts, now: Facts, known: Known, *, settled: bool,
               protected_before: set[str] | None = None) -> list[Violation]:
    """Every invariant that one step can break (the settled ones only once settled);
    protected_before: the hosts protected when the step began."""
    found = (off_host_holds_server(now, known) + instance_lost(now, known)
             + protected_host_disabled(before, now, known)
             + protected_host_touched(before, now, known, protected_before)
             + journal_unexplained(before, now, known) + pinned_moved(now, known))
    if settled:
        found += instance_stuck(now)
    return found
