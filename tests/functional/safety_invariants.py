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
    "two_actors",                  # never two executors acting at once
    "journal_unexplained",         # every change of a host's service or power is journaled
    "rollback_incomplete",         # rollback restores what consolidator moved, may move
    "pinned_moved",                # consolidator never migrates a pinned server
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

    def __str__(self) -> str:
        return f"{self.invariant}: {self.detail}"


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
    def read(cls, state: dict[str, Any], db_path: str) -> Facts:
        """From the fake cloud's summary and the SQLite database at db_path."""
        migrating = sum(1 for m in state["migrations"]
                        if m["status"] in ("queued", "preparing", "running", "post-migrating"))
        return cls(hosts=state["hosts"], servers=state["servers"], migrating=migrating,
                   journal=read_journal(db_path))

    def where(self) -> dict[str, str]:
        """Each server's host."""
        return {name: s["host"] for name, s in self.servers.items()}


def read_journal(db_path: str) -> list[Row]:
    """Every journal row, oldest first, read without the product's code."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=60)
    try:
        cur = conn.execute("SELECT id, plan_id, action, target, params, state, created_at, "
                           "started_at, finished_at, result, lease_holder, lease_generation "
                           "FROM journal ORDER BY id")
        return [Row(r[0], r[1], r[2], r[3], json.loads(r[4] or "{}"), r[5], str(r[6]),
                    None if r[7] is None else str(r[7]), None if r[8] is None else str(r[8]),
                    r[9], r[10], r[11]) for r in cur.fetchall()]
    finally:
        conn.close()


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

    def protected(self) -> dict[str, str]:
        """Each host consolidator must not enable, power on or give work, and why."""
        out = {h: "excluded" for h in self.excluded}
        out.update({h: "out of scope" for h in self.out_of_scope})
        out.update({h: "drained" for h in self.drained})
        out.update({h: "held by the operator" for h in self.held})
        return out


def off_host_holds_server(now: Facts) -> list[Violation]:
    """No powered-off host holds a server."""
    return [Violation("off_host_holds_server",
                      f"{host} is off and holds {', '.join(sorted(on))}")
            for host, rec in sorted(now.hosts.items()) if rec["power"] == "off"
            for on in [[n for n, s in now.servers.items() if s["host"] == host]] if on]


def instance_lost(now: Facts, known: Known) -> list[Violation]:
    """Every server that was not deleted still exists."""
    return [Violation("instance_lost", f"{name} is gone")
            for name in sorted(known.servers - set(now.servers))]


def instance_stuck(now: Facts) -> list[Violation]:
    """Once the cloud settled: no server in ERROR or MIGRATING."""
    return [Violation("instance_stuck", f"{name} is {s['status']} on {s['host']}")
            for name, s in sorted(now.servers.items())
            if s["status"] in ("ERROR", "MIGRATING") or s.get("task_state") == "migrating"]


def protected_host_touched(before: Facts, now: Facts, known: Known) -> list[Violation]:
    """No held, drained, out-of-scope or excluded host was enabled, powered on or given
    work, except by the operator or the admin themselves (the operator's 'hosts power on
    HOST' may power that host on, not enable a drained or held one)."""
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
                      and known.placed_by_others.get(n) != host)
        if came:
            out.append(Violation("protected_host_touched",
                                 f"{host} ({why}) was given {', '.join(came)}"))
    return out


def two_actors(now: Facts) -> list[Violation]:
    """No service or power action of one lease holder ended done after another holder of a
    newer lease generation had started acting: two executors acted at once."""
    rows = [r for r in now.journal if r.action in ACTING and r.lease_holder
            and r.started_at and r.state != "skipped"]
    out = []
    for old in rows:
        if old.state != "succeeded" or not old.finished_at:
            continue
        for new in rows:
            if (new.lease_holder != old.lease_holder and new.id > old.id
                    and (new.lease_generation or 0) > (old.lease_generation or 0)
                    and old.started_at < new.started_at < old.finished_at):   # type: ignore
                out.append(Violation("two_actors", (
                    f"journal row {old.id} ({old.action} {old.target}, holder "
                    f"{old.lease_holder} gen {old.lease_generation}) finished after row "
                    f"{new.id} ({new.action} {new.target}, gen {new.lease_generation}) "
                    f"started")))
                break
    return out


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


def check_step(before: Facts, now: Facts, known: Known, *, settled: bool) -> list[Violation]:
    """Every invariant that one step can break (the settled ones only once settled)."""
    found = (off_host_holds_server(now) + instance_lost(now, known)
             + protected_host_touched(before, now, known) + two_actors(now)
             + journal_unexplained(before, now, known) + pinned_moved(now, known))
    if settled:
        found += instance_stuck(now)
    return found
