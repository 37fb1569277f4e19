"""/v1/rollbacks, /v1/journal, /v1/report and /v1/jobs."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from flask import Flask, Response, jsonify

from consolidator.api import conventions
from consolidator.api.bodies import Field
from consolidator.api.errors import bad_field
from consolidator.api.service import allow, context, service
from consolidator.api.views import accepted, body, job_view, listing, query
from consolidator.api.views_plans import plan_row
from consolidator.app import jobs as job_cases
from consolidator.app import records
from consolidator.app.jobs import JOB_STATES, request_job
from consolidator.app.report import report_json
from consolidator.core.errors import NotFoundError


def register(app: Flask) -> None:
    """The routes of the records."""
    app.add_url_rule("/v1/rollbacks", "rollbacks", list_rollbacks, methods=["GET"])
    app.add_url_rule("/v1/rollbacks", "rollback_create", create_rollback, methods=["POST"])
    app.add_url_rule("/v1/journal", "journal", list_journal, methods=["GET"])
    app.add_url_rule("/v1/report", "report", show_report, methods=["GET"])
    app.add_url_rule("/v1/jobs", "jobs", list_jobs, methods=["GET"])
    app.add_url_rule("/v1/jobs/<job_id>", "job", show_job, methods=["GET"])


def list_rollbacks() -> Response:
    """GET /v1/rollbacks: the rollback plans, newest first."""
    allow("rollback:list")
    args = query()
    rows = [r for r in records.plans(context(), None, None) if r.algorithm == "rollback"]
    return listing("rollbacks", rows, lambda r: r.id, plan_row, args)


def create_rollback() -> Response:
    """POST /v1/rollbacks {snapshot_id, partial}: a job."""
    allow("rollback:create")
    fields = body({"snapshot_id": Field(str, required=True), "partial": Field(bool)})
    ctx = context()
    try:
        snapshot = records.snapshot(ctx, fields["snapshot_id"]).info
    except NotFoundError:
        raise bad_field("snapshot_id", f"no snapshot {fields['snapshot_id']!r}") from None
    return accepted(request_job(ctx, cloud=service().cloud, kind="rollback",
                                target=snapshot.id,
                                params={"partial": bool(fields.get("partial"))}))


def _since(raw: str | None) -> datetime | None:
    if raw is None:
        return None
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
        # in UTC, as the store compares it: a time whose UTC falls outside years 1-9999 is
        # refused here, not by the store
        return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)
                ).astimezone(timezone.utc)
    except (ValueError, OverflowError):
        raise bad_field("since", f"{conventions.shorten(raw)!r} is not an ISO 8601 time "
                                 f"within years 1 to 9999 (UTC)") from None


def entry_view(entry: Any) -> dict[str, Any]:
    """A journal row as JSON."""
    return {"id": entry.id, "cloud": entry.cloud, "plan_id": entry.plan_id,
            "action": entry.action, "target": entry.target, "params": entry.params,
            "state": entry.state, "created_at": conventions.iso(entry.created_at),
            "started_at": conventions.iso(entry.started_at),
            "finished_at": conventions.iso(entry.finished_at), "result": entry.result,
            "operator": entry.operator}


def list_journal() -> Response:
    """GET /v1/journal (plan_id=, host=, action=, since=), newest first."""
    from consolidator.app.review import journal_entries

    allow("journal:list")
    args = query("plan_id", "host", "action", "since")
    actions = tuple(args["action"].split(",")) if args.get("action") else ()
    rows = journal_entries(context(), plan_ref=args.get("plan_id"), limit=records.MOST_ROWS,
                           host=args.get("host"), since=_since(args.get("since")),
                           actions=actions)
    return listing("journal", list(reversed(rows)), lambda e: str(e.id), entry_view, args)


def show_report() -> Response:
    """GET /v1/report (days=)."""
    from consolidator.app.report import build_report

    allow("report:get")
    args = query("days")
    raw = args.get("days", "7")
    days = conventions.whole(raw)
    if days is None or not 1 <= days <= 3660:
        raise bad_field("days", f"{conventions.shorten(raw)!r} is not a whole number of days "
                                f"from 1 to 3660")
    end = datetime.now(timezone.utc)
    found = build_report(context(), service().cloud, end - timedelta(days=days), end)
    return jsonify({"report": report_json(found)})


def list_jobs() -> Response:
    """GET /v1/jobs (state=), newest first."""
    allow("job:list")
    args = query("state")
    if args.get("state") and args["state"] not in JOB_STATES:
        raise bad_field("state", f"{args['state']!r} is not one of {', '.join(JOB_STATES)}")
    rows = job_cases.job_list(context(), timeout=service().settings.job_timeout,
                    limit=records.MOST_ROWS, marker=None, state=args.get("state"))
    return listing("jobs", rows, lambda j: j.id, job_view, args)


def show_job(job_id: str) -> Response:
    """GET /v1/jobs/{id}."""
    allow("job:get")
    query()
    return jsonify({"job": job_view(job_cases.job_view(
        context(), job_id, timeout=service().settings.job_timeout))})
