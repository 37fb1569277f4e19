"""/v1/snapshots and /v1/plans: read from the store; snapshots and plans made, applied and
dry-run by the daemon as jobs; plans approved and cancelled here, each with its ETag."""

from __future__ import annotations

from typing import Any

from flask import Flask, Response, jsonify, request

from consolidator.api import conventions
from consolidator.api.bodies import Field
from consolidator.api.errors import ApiError, bad_field
from consolidator.api.service import allow, context, service
from consolidator.api.views import accepted, body, listing, query
from consolidator.app import records
from consolidator.app.jobs import request_job
from consolidator.core.errors import NotFoundError, UsageError

PLAN_FIELDS = {
    "snapshot_id": Field(str), "algorithm": Field(str), "ranking": Field(str),
    "spare": Field(int, minimum=0, maximum=100_000),
    "capacity_model": Field(str, choices=("auto", "placement", "ucac")),
    "confidence": Field(float, minimum=0.5, maximum=0.999999),
    "options": Field(dict), "max_migrations": Field(int, minimum=0, maximum=10_000_000),
    "max_moved_gib": Field(float, minimum=0), "target_hosts": Field(int, minimum=1),
    "objective": Field(str, choices=("hosts", "energy")), "scope": Field(str),
    "front": Field(bool)}
PLAN_STATES = ("proposed", "approved", "running", "succeeded", "failed", "cancelled",
               "superseded", "interrupted")


def register(app: Flask) -> None:
    """The routes of snapshots and plans."""
    app.add_url_rule("/v1/snapshots", "snapshots", list_snapshots, methods=["GET"])
    app.add_url_rule("/v1/snapshots", "snapshot_create", create_snapshot, methods=["POST"])
    app.add_url_rule("/v1/snapshots/<ref>", "snapshot", show_snapshot, methods=["GET"])
    app.add_url_rule("/v1/plans", "plans", list_plans, methods=["GET"])
    app.add_url_rule("/v1/plans", "plan_create", create_plan, methods=["POST"])
    app.add_url_rule("/v1/plans/<ref>", "plan", show_plan, methods=["GET"])
    for action in ("approve", "cancel", "apply", "dry-run"):
        app.add_url_rule(f"/v1/plans/<ref>/{action}", f"plan_{action}", plan_action,
                         methods=["POST"], defaults={"action": action})


def snapshot_header(info: Any) -> dict[str, Any]:
    """A snapshot's header as JSON."""
    return {"id": info.id, "cloud": info.cloud, "taken_at": conventions.iso(info.taken_at),
            "source": info.source, "capacity_source": info.capacity_source,
            "host_count": info.host_count, "instance_count": info.instance_count}


def list_snapshots() -> Response:
    """GET /v1/snapshots."""
    allow("snapshot:list")
    args = query("cloud")
    return listing("snapshots", records.snapshots(context(), args.get("cloud")),
                   lambda i: i.id, snapshot_header, args)


def show_snapshot(ref: str) -> Response:
    """GET /v1/snapshots/{id}: its header and its hosts (no BMC detail)."""
    allow("snapshot:get")
    query()
    snap = records.snapshot(context(), ref)
    return jsonify({"snapshot": {**snapshot_header(snap.info),
                                 "hosts": records.host_views(snap, {})}})


def create_snapshot() -> Response:
    """POST /v1/snapshots: a job; the daemon reads the cloud."""
    allow("snapshot:create")
    body({})
    svc = service()
    return accepted(request_job(context(), cloud=svc.cloud, kind="snapshot", target=svc.cloud,
                                params={}))


def plan_row(row: Any) -> dict[str, Any]:
    """A listed plan."""
    return {"id": row.id, "cloud": row.cloud, "status": row.status,
            "algorithm": row.algorithm, "ranking": row.ranking,
            "snapshot_id": row.snapshot_id, "migrations": row.migrations,
            "hosts_before": row.hosts_before, "hosts_after": row.hosts_after,
            "created_at": conventions.iso(row.created_at),
            "updated_at": conventions.iso(row.updated_at)}


def list_plans() -> Response:
    """GET /v1/plans (status=, cloud=)."""
    allow("plan:list")
    args = query("status", "cloud")
    if args.get("status") and args["status"] not in PLAN_STATES:
        raise bad_field("status", f"{args['status']!r} is not one of {', '.join(PLAN_STATES)}")
    return listing("plans", records.plans(context(), args.get("cloud"), args.get("status")),
                   lambda r: r.id, plan_row, args)


def _plan(ref: str) -> Any:
    from consolidator.app.review import show_plan as load

    return load(context(), ref)[0]


def plan_tag(plan: Any) -> str:
    """The plan's ETag: it changes with its state."""
    return conventions.etag(plan.id, plan.status, plan.updated_at.isoformat())


def _plan_response(plan: Any, status: int = 200) -> Response:
    from consolidator.app.records import plan_maker

    document = plan.to_json()
    document["created_at"] = conventions.iso(plan.created_at)
    document["updated_at"] = conventions.iso(plan.updated_at)
    document["created_by"] = plan_maker(context(), plan.id)
    response = jsonify({"plan": document})
    response.status_code = status
    response.headers["ETag"] = plan_tag(plan)
    return response


def show_plan(ref: str) -> Response:
    """GET /v1/plans/{id}, with its ETag."""
    allow("plan:get")
    query()
    return _plan_response(_plan(ref))


def create_plan() -> Response:
    """POST /v1/plans: the CLI's choices, checked here; a job makes the plan."""
    from consolidator.app.jobs import PLAN_FIELDS as CHOICES
    from consolidator.app.planning import PlanRequest, validate_request

    allow("plan:create")
    fields = body(PLAN_FIELDS)
    ctx = context()
    choices = {k: fields[k] for k in CHOICES if k in fields}
    try:
        validate_request(ctx, PlanRequest(**choices))
    except UsageError as exc:
        raise ApiError(400, "invalid_choice", "Bad Request", str(exc)) from None
    if fields.get("front") and any(k in fields for k in ("max_migrations", "max_moved_gib",
                                                         "target_hosts")):
        raise bad_field("front", "the front shows every trade-off and stores no plan: drop "
                                 "the budget, or drop front")
    snapshot_id = fields.get("snapshot_id")
    if snapshot_id is not None:
        try:
            snapshot_id = records.snapshot(ctx, snapshot_id).info.id
        except NotFoundError:
            raise bad_field("snapshot_id", f"no snapshot {snapshot_id!r}") from None
    svc = service()
    params = {**choices, "snapshot_id": snapshot_id, "front": bool(fields.get("front"))}
    return accepted(request_job(ctx, cloud=svc.cloud, kind="plan",
                                target=snapshot_id or svc.cloud, params=params))


def plan_action(ref: str, action: str) -> Response:
    """POST /v1/plans/{id}/approve|cancel (here), apply|dry-run (jobs)."""
    from consolidator.app.review import change_status

    allow(f"plan:{action.replace('-', '_')}")
    body({})
    plan = _plan(ref)
    if action != "dry-run":
        conventions.check_if_match(request.headers.get("If-Match"), plan_tag(plan),
                                   f"plan {plan.id}")
    ctx = context()
    if action in ("approve", "cancel"):
        change_status(ctx, plan.id, "approved" if action == "approve" else "cancelled")
        return _plan_response(_plan(plan.id))
    from consolidator.app.review import from_a_scenario

    why = from_a_scenario(plan)
    if why is not None:
        raise ApiError(409, "conflict", "Conflict", f"plan {plan.id} {why}")
    if action == "apply" and plan.status != "approved":
        raise ApiError(409, "not_approved", "Conflict",
                       f"plan {plan.id} has the status {plan.status}: only an approved plan "
                       f"is applied (POST /v1/plans/{plan.id}/approve first)")
    kind = "apply" if action == "apply" else "dry_run"
    return accepted(request_job(ctx, cloud=plan.cloud, kind=kind, target=plan.id,
                                params={}, plan_id=plan.id))
