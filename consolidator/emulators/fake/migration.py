"""Live migration as Nova runs it: API checks at once, then conductor checks, claim, finish."""

from __future__ import annotations

from collections.abc import Callable

from consolidator.emulators.fake.state import (
    CloudState,
    HostRecord,
    MigrationRecord,
    ServerRecord,
    utc_now,
)

#: What a migration fault does: 'fails' ends it in error, 'hangs' keeps it running,
#: 'elsewhere' lands it on another valid host than the one asked for (the conductor's pick),
#: 'slow <seconds>' makes it take that long.
MigrationFault = Callable[[ServerRecord], "str | None"]


class MigrationRejected(Exception):
    """The API refuses a live migration synchronously (HTTP status and Nova's message)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def live_migrate(state: CloudState, server_id: str, host: str | None, *, force: bool,
                 bandwidth_mb_s: float, queue_seconds: float,
                 fault: MigrationFault) -> MigrationRecord:
    """Accept a live migration (or raise MigrationRejected); it then runs on simulated time."""
    with state.locked() as now:
        server = state.servers.get(server_id)
        if server is None:
            raise MigrationRejected(404, f"Instance {server_id} could not be found.")
        if server.vm_state not in ("active", "paused"):
            raise MigrationRejected(409, f"Cannot 'os-migrateLive' instance {server.id} "
                                         f"while it is in vm_state {server.vm_state}")
        if server.task_state is not None:
            raise MigrationRejected(409, f"Cannot 'os-migrateLive' instance {server.id} "
                                         f"while it is in task_state {server.task_state}")
        source = state.hosts[server.host]
        dest = None
        if host is not None:
            dest = state.by_compute_host.get(host)
            if dest is None:
                raise MigrationRejected(400, f"Compute host {host} could not be found.")
            if dest is source:
                raise MigrationRejected(400, f"Unable to migrate instance ({server.id}) "
                                             f"to current host ({host}).")
        stamp = utc_now()
        effect = fault(server)
        duration = server.flavor.ram / bandwidth_mb_s if bandwidth_mb_s > 0 else 0.0
        if effect and effect.startswith("slow "):
            duration = float(effect.split()[1])
            effect = None
        mig = MigrationRecord(
            id=len(state.migrations) + 1,
            uuid=_migration_uuid(server.id, len(state.migrations) + 1),
            server_id=server.id, source=source.name, dest=dest.name if dest else None,
            status="queued", created_at=stamp, updated_at=stamp,
            project_id=server.project_id, user_id=server.user_id,
            fault=effect, forced=force, duration=duration, memory_mb=int(server.flavor.ram))
        state.migrations.append(mig)
        server.status, server.task_state, server.updated = "MIGRATING", "migrating", stamp
        state.notify("requested", mig)
        state.schedule(now + queue_seconds, "start", mig)
        return mig


def _migration_uuid(server_id: str, number: int) -> str:
    from consolidator.core.model import stable_uuid

    return stable_uuid("migration", f"{server_id}:{number}")


def memory_copied(mig: MigrationRecord, total: int, now: float | None) -> int:
    """Bytes of guest memory copied so far: none while queued, all once completed, and in
    between the share of its duration it has run (by simulated time `now`)."""
    if mig.status == "queued":
        return 0
    if mig.status != "running" or now is None or mig.started is None or mig.duration <= 0:
        return total
    return int(total * min(max((now - mig.started) / mig.duration, 0.0), 1.0))


def handle_event(state: CloudState, kind: str, mig: MigrationRecord, at: float) -> None:
    """Run one due migration event; the caller holds the state's lock."""
    server = state.servers[mig.server_id]
    if kind == "start":
        _start(state, mig, server, at)
    elif kind == "finish":
        _finish(state, mig, server)


def _start(state: CloudState, mig: MigrationRecord, server: ServerRecord, at: float) -> None:
    """The conductor and scheduler: pick or check the destination, claim, then run."""
    source = state.hosts[mig.source]
    if mig.dest is None:
        dest = _schedule(state, server, source, at)
        if dest is None:
            _fail(mig, server, "No valid host was found. There are not enough hosts available.")
            return
        mig.dest = dest.name
    else:
        dest = state.hosts[mig.dest]
        if mig.fault == "elsewhere":
            other = _schedule(state, server, source, at, besides=dest)
            if other is not None:
                dest, mig.dest = other, other.name
        problem = destination_problem(state, server, dest, at, forced=mig.forced)
        if problem is not None:
            _fail(mig, server, problem)
            return
    state.notify("started", mig)
    resources = source.release(server.id) or server.resources
    source.allocate(mig.uuid, resources)
    dest.allocate(server.id, resources)
    mig.status, mig.updated_at, mig.started = "running", utc_now(), at
    if mig.fault != "hangs":
        state.schedule(at + mig.duration, "finish", mig)


def _finish(state: CloudState, mig: MigrationRecord, server: ServerRecord) -> None:
    """Complete the migration, or roll it back to the source when a fault says it fails."""
    source, dest = state.hosts[mig.source], state.hosts[mig.dest or mig.source]
    resources = source.release(mig.uuid) or server.resources
    if mig.fault == "fails":
        dest.release(server.id)
        source.allocate(server.id, resources)
        _fail(mig, server, "live migration failed on the destination (injected fault)")
        return
    del source.servers[server.id]
    dest.servers[server.id] = None
    server.host = dest.name
    mig.status = "completed"
    mig.updated_at = server.updated = utc_now()
    server.status, server.task_state = "ACTIVE", None


def _fail(mig: MigrationRecord, server: ServerRecord, reason: str) -> None:
    """End a migration in error; the server stays ACTIVE on its source, as in Nova."""
    mig.status, mig.error = "error", reason
    mig.updated_at = server.updated = utc_now()
    server.status, server.task_state = "ACTIVE", None


def destination_problem(state: CloudState, server: ServerRecord, dest: HostRecord,
                        now: float, *, forced: bool = False) -> str | None:
    """Why the conductor or scheduler would refuse `dest` for `server`, or None."""
    if state.service_state(dest, now) != "up":
        return f"Compute service of {dest.compute_host} is unavailable at this time."
    if not forced and dest.status != "enabled":
        return f"No valid host was found. Host {dest.compute_host} is disabled."
    capacity = dest.capacity()
    for name, used, want, cap, limit in zip(dest.classes, dest.used, server.resources,
                                            capacity, dest.max_units(), strict=True):
        if want and (want > limit or used + want > cap):
            return (f"Unable to move instance {server.id} to host {dest.compute_host}. "
                    f"There is not enough capacity on the host for the instance "
                    f"({name}: {used} used + {want} requested > {cap:g}).")
    if forced:
        return None
    missing = [t for t in server.model.required_traits if t not in dest.model.traits]
    present = [t for t in server.model.forbidden_traits if t in dest.model.traits]
    if missing or present:
        return (f"No valid host was found. Host {dest.compute_host} "
                f"{'lacks trait ' + missing[0] if missing else 'has trait ' + present[0]}.")
    for group in state.groups_of.get(server.id, ()):
        others = {host for m in group.members if m != server.id
                  and (host := state.servers[m].host) is not None}
        others |= {m.dest for m in state.migrations
                   if m.status == "running" and m.server_id in group.members
                   and m.server_id != server.id and m.dest is not None}
        if group.policy == "anti-affinity" and dest.name in others:
            return (f"No valid host was found. Host {dest.compute_host} violates the "
                    f"anti-affinity policy of server group {group.id}.")
        if group.policy == "affinity" and others and dest.name not in others:
            return (f"No valid host was found. Host {dest.compute_host} violates the "
                    f"affinity policy of server group {group.id}.")
    return None


def pick_host(state: CloudState, server: ServerRecord, now: float) -> HostRecord | None:
    """The scheduler's choice for a new server: the valid host with most free RAM."""
    return _schedule(state, server, None, now)


def _schedule(state: CloudState, server: ServerRecord, source: HostRecord | None,
              now: float, besides: HostRecord | None = None) -> HostRecord | None:
    """The scheduler's choice when no host is given (or another than `besides`): the valid
    host with most free RAM."""
    best, best_free = None, None
    for rec in state.hosts.values():
        if any(rec is other for other in (source, besides)) \
                or destination_problem(state, server, rec, now) is not None:
            continue
        free = rec.capacity()[1] - rec.used[1]
        if best_free is None or free > best_free:
            best, best_free = rec, free
    return best


def abort(state: CloudState, mig: MigrationRecord) -> None:
    """DELETE /servers/{id}/migrations/{mid}: the live migration stops; the server stays on
    its source and the destination's claim is dropped (the caller holds the lock)."""
    server = state.servers[mig.server_id]
    if mig.status == "running":
        source, dest = state.hosts[mig.source], state.hosts[mig.dest or mig.source]
        resources = source.release(mig.uuid) or server.resources
        dest.release(server.id)
        source.allocate(server.id, resources)
    state.events = [e for e in state.events if e[3] is not mig]
    mig.status, mig.error = "cancelled", "aborted through the API"
    mig.updated_at = server.updated = utc_now()
    server.status, server.task_state = "ACTIVE", None


def force_complete(state: CloudState, mig: MigrationRecord) -> None:
    """POST .../action force_complete: a running live migration finishes now."""
    state.events = [e for e in state.events if e[3] is not mig]
    mig.fault = None
    _finish(state, mig, state.servers[mig.server_id])
