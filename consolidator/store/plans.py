"""Plans in the database: stored with their migrations and power actions, and moved through
the states that consolidator.core.plan defines."""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import ColumnElement, Connection, Engine, func, or_, select, update

from consolidator.core.errors import NotFoundError
from consolidator.core.plan import Move, PlanDraft, StoredPlan, check_transition
from consolidator.store import totals
from consolidator.store.db import resolve_id, translate_errors
from consolidator.store.tables import plan_migrations, plan_power_actions, plans, snapshots


def save_plan(engine: Engine, draft: PlanDraft, *, cloud: str, snapshot_id: str,
              supersede: bool = True, plan_id: str | None = None,
              created_by: dict[str, Any] | None = None) -> StoredPlan:
    """Store a proposed plan (under plan_id when given, else a new one) and (unless told
    not to) supersede the cloud's proposed plans made from other snapshots, in one
    transaction; return it as stored. Plans of the same snapshot stay side by side until one
    of them is approved."""
    plan_id = plan_id or str(uuid.uuid4())
    now = datetime.now(timezone.utc)
    details = {"notes": list(draft.notes), "options": dict(draft.options),
               "left_on": dict(draft.left_on),
               "spare_hosts": list(draft.spare_hosts), "idle_watts": draft.idle_watts,
               "host_watts": dict(draft.host_watts), "watts_basis": dict(draft.watts_basis),
               "objective": draft.objective, "choice": dict(draft.choice),
               "drain": list(draft.drain)}
    if created_by is not None:
        details["created_by"] = created_by
    with translate_errors(engine), engine.begin() as conn:
        if supersede:
            conn.execute(update(plans).where(_of_the_cloud(conn, cloud, snapshot_id),
                                             plans.c.status == "proposed",
                                             plans.c.snapshot_id != snapshot_id)
                         .values(status="superseded", updated_at=now,
                                 reason=f"superseded by plan {plan_id}"))
        conn.execute(plans.insert(), {
            "id": plan_id, "cloud": cloud, "snapshot_id": snapshot_id,
            "algorithm": draft.algorithm, "ranking": draft.ranking, "status": "proposed",
            "created_at": now, "updated_at": now, "hosts_before": draft.hosts_before,
            "hosts_after": draft.hosts_after, "lower_bound": draft.lower_bound,
            "migrations_lower_bound": draft.migrations_lower_bound, "spare": draft.spare,
            "reason": None, "details": details})
        if draft.migrations:
            conn.execute(plan_migrations.insert(), [
                {"plan_id": plan_id, "instance_id": m.instance_id, "position": pos,
                 "instance_name": m.instance_name, "source": m.source,
                 "destination": m.destination, "wave": m.wave}
                for pos, m in enumerate(draft.migrations)])
        actions = [("off", h) for h in draft.power_off] + [("on", h) for h in draft.power_on]
        if actions:
            conn.execute(plan_power_actions.insert(), [
                {"plan_id": plan_id, "host": host, "action": action, "position": pos}
                for pos, (action, host) in enumerate(actions)])
    return StoredPlan(id=plan_id, cloud=cloud, snapshot_id=snapshot_id, status="proposed",
                      created_at=now, updated_at=now, reason=None, draft=draft)


def resolve_plan_id(engine: Engine, ref: str) -> str:
    """The full id of the plan named by an id or a unique prefix of one."""
    return resolve_id(engine, plans.c.id, ref, "plan")


def load_plan(engine: Engine, ref: str) -> StoredPlan:
    """Read a plan back (by id or unique prefix)."""
    plan_id = resolve_plan_id(engine, ref)
    with translate_errors(engine), engine.connect() as conn:
        row = conn.execute(select(plans).where(plans.c.id == plan_id)).one()
        moves = conn.execute(select(plan_migrations).where(plan_migrations.c.plan_id == plan_id)
                             .order_by(plan_migrations.c.position)).all()
        power = conn.execute(select(plan_power_actions.c.action, plan_power_actions.c.host)
                             .where(plan_power_actions.c.plan_id == plan_id)
                             .order_by(plan_power_actions.c.position)).all()
    return _stored(row, moves, power)


def creator(engine: Engine, plan_id: str) -> dict[str, Any] | None:
    """Who made a plan (an Actor's JSON), or None for a plan stored without one."""
    with translate_errors(engine), engine.connect() as conn:
        details = conn.execute(select(plans.c.details).where(plans.c.id == plan_id)).scalar()
    return (details or {}).get("created_by")


def _stored(row: Any, moves: Any, power: Any) -> StoredPlan:
    details = row.details or {}
    draft = PlanDraft(
        algorithm=row.algorithm, ranking=row.ranking,
        migrations=tuple(Move(m.instance_id, m.instance_name, m.source, m.destination, m.wave)
                         for m in moves),
        power_off=tuple(h for a, h in power if a == "off"),
        power_on=tuple(h for a, h in power if a == "on"),
        hosts_before=row.hosts_before, hosts_after=row.hosts_after,
        lower_bound=row.lower_bound, migrations_lower_bound=row.migrations_lower_bound,
        spare=row.spare, spare_hosts=tuple(details.get("spare_hosts", ())),
        notes=tuple(details.get("notes", ())), options=details.get("options", {}),
        idle_watts=float(details.get("idle_watts", 270.0)),
        left_on=dict(details.get("left_on") or {}),
        host_watts=dict(details.get("host_watts") or {}),
        watts_basis=dict(details.get("watts_basis") or {}),
        objective=str(details.get("objective") or "hosts"),
        choice=dict(details.get("choice") or {}),
        drain=tuple(details.get("drain") or ()))
    return StoredPlan(id=row.id, cloud=row.cloud, snapshot_id=row.snapshot_id,
                      status=row.status, created_at=row.created_at, updated_at=row.updated_at,
                      reason=row.reason, draft=draft)


def list_plans(engine: Engine, *, cloud: str | None = None, status: str | None = None,
               limit: int = 50) -> list[Any]:
    """Plan header rows, newest first, each with its number of migrations."""
    moves = (select(func.count()).where(plan_migrations.c.plan_id == plans.c.id)
             .scalar_subquery().label("migrations"))
    query = select(plans, moves).order_by(plans.c.created_at.desc()).limit(limit)
    if cloud:
        query = query.where(plans.c.cloud == cloud)
    if status:
        query = query.where(plans.c.status == status)
    with translate_errors(engine), engine.connect() as conn:
        return list(conn.execute(query))


def statuses(engine: Engine, plan_ids: set[str]) -> dict[str, str]:
    """The state of each of these plans that exists."""
    if not plan_ids:
        return {}
    query = select(plans.c.id, plans.c.status).where(plans.c.id.in_(sorted(plan_ids)))
    with translate_errors(engine), engine.connect() as conn:
        return {str(row.id): str(row.status) for row in conn.execute(query)}


def count_by_status(engine: Engine, cloud: str | None = None) -> dict[str, int]:
    """How many plans are in each state (of one cloud, or all)."""
    query = select(plans.c.status, func.count()).group_by(plans.c.status)
    if cloud:
        query = query.where(plans.c.cloud == cloud)
    with translate_errors(engine), engine.connect() as conn:
        return {status: int(n) for status, n in conn.execute(query)}


def count_run(conn: Connection, algorithm: str, current: str, status: str) -> None:
    """Add a run's start or end to the metric totals, in the transaction that records it:
    runs_started_total{kind} when a plan starts running, runs_total{kind,result} when it
    leaves running."""
    kind = "rollback" if algorithm == "rollback" else "plan"
    if status == "running" and current != "running":
        totals.add_on(conn, "runs_started_total", {"kind": kind})
    elif current == "running" and status != "running":
        totals.add_on(conn, "runs_total", {"kind": kind, "result": status})


def set_status(engine: Engine, plan_id: str, status: str, reason: str | None = None, *,
               supersede: bool = True) -> str:
    """Move a plan to a new state if its current state allows it; return the old state.
    Approving a plan supersedes (unless told not to) the other proposed plans of its
    cloud."""
    with translate_errors(engine), engine.begin() as conn:
        row = conn.execute(select(plans.c.status, plans.c.algorithm)
                           .where(plans.c.id == plan_id).with_for_update()).first()
        if row is None:
            raise NotFoundError(f"plan {plan_id!r} does not exist")
        current, algorithm = str(row.status), str(row.algorithm)
        check_transition(plan_id, current, status)
        now = datetime.now(timezone.utc)
        conn.execute(update(plans).where(plans.c.id == plan_id, plans.c.status == current)
                     .values(status=status, reason=reason, updated_at=now))
        count_run(conn, algorithm, current, status)
        if status == "approved" and supersede:    # chosen: the other candidates are done
            mine = conn.execute(select(plans.c.cloud, plans.c.snapshot_id)
                                .where(plans.c.id == plan_id)).one()
            conn.execute(update(plans).where(_of_the_cloud(conn, mine.cloud, mine.snapshot_id),
                                             plans.c.id != plan_id,
                                             plans.c.status == "proposed")
                         .values(status="superseded", updated_at=now,
                                 reason=f"superseded: plan {plan_id} was approved"))
    return current


def _of_the_cloud(conn: Connection, cloud: str, snapshot_id: str) -> ColumnElement[bool]:
    """The plans of a cloud under any of its clouds.yaml names: of the name, or of a
    snapshot read from the same identity as snapshot_id's (issue 45: a drain under one name
    supersedes the plans made under another). A scenario's snapshot has no identity."""
    endpoint = conn.execute(select(snapshots.c.endpoint)
                            .where(snapshots.c.id == snapshot_id)).scalar()
    if endpoint is None:
        return plans.c.cloud == cloud
    return or_(plans.c.cloud == cloud, plans.c.snapshot_id.in_(
        select(snapshots.c.id).where(snapshots.c.endpoint == endpoint)))
