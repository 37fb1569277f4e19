"""The pages: hosts, plans and a plan's review, a job live, the journal, the history. Each
reads the API with the signed-in person's token; a change is refused here when the policy
refuses it (403), and the API refuses it all the same."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flask import Flask, g, jsonify, redirect, render_template, request, url_for

from consolidator.api.dashboard import charts, pages
from consolidator.api.dashboard.upstream import ApiError
from consolidator.core.front import MADE_BY

#: The state changes of a plan the pages offer, each in the states it applies to.
PLAN_ACTIONS = {"approve": ("proposed",), "cancel": ("proposed", "approved"),
                "apply": ("approved",)}
#: What the journal page filters on (the API's query parameters).
JOURNAL_FILTERS = ("plan_id", "host", "action", "since")


def register(app: Flask, signed_in: Callable[..., Any]) -> None:
    for rule, name, view, methods in (
            ("/", "home", home, ["GET"]), ("/hosts", "hosts", hosts, ["GET"]),
            ("/plans", "plans", plans, ["GET"]), ("/plans", "plan_create", plan_create, ["POST"]),
            ("/plans/<plan_id>", "plan", plan, ["GET"]),
            ("/plans/<plan_id>/<action>", "plan_action", plan_action, ["POST"]),
            ("/jobs/<job_id>", "job", job, ["GET"]),
            ("/jobs/<job_id>.json", "job_json", job_json, ["GET"]),
            ("/journal", "journal", journal, ["GET"]),
            ("/history", "history", history, ["GET"])):
        app.add_url_rule(rule, name, signed_in(view), methods=methods)
    app.register_error_handler(ApiError, _api_error)
    for status in (400, 401, 403, 404):
        app.register_error_handler(status, _http_error)


def _page(template: str, **values: Any) -> str:
    return render_template(template, session=g.session, may=g.may, **values)


def _api_error(exc: ApiError) -> Any:
    return render_template("error.html", status=exc.answer.status, detail=exc.answer.detail,
                           session=getattr(g, "session", None)), exc.answer.status


def _http_error(exc: Any) -> Any:
    return render_template("error.html", status=exc.code, detail=exc.description,
                           session=getattr(g, "session", None)), exc.code


def home() -> Any:
    return redirect(url_for("hosts"))


def hosts() -> Any:
    zone, aggregate = request.args.get("zone", ""), request.args.get("aggregate", "")
    try:
        rows = g.api.every("/v1/hosts", "hosts")
    except ApiError as exc:
        if exc.answer.status != 404:
            raise
        rows = []   # no snapshot yet: the page says so
    return _page("hosts.html", page=pages.hosts_page(rows, zone=zone, aggregate=aggregate),
                 zone=zone, aggregate=aggregate)


def plans() -> Any:
    rows = g.api.every("/v1/plans", "plans", status=request.args.get("status"))
    return _page("plans.html", plans=rows, status=request.args.get("status", ""),
                 states=pages_states())


def pages_states() -> tuple[str, ...]:
    return ("proposed", "approved", "running", "succeeded", "failed", "cancelled",
            "superseded", "interrupted")


def plan(plan_id: str) -> Any:
    answer = g.api.get(f"/v1/plans/{plan_id}")
    doc = answer.doc["plan"]
    snapshot_hosts: list[dict[str, Any]] = []
    if doc.get("snapshot_id"):
        try:
            snapshot_hosts = g.api.get(f"/v1/snapshots/{doc['snapshot_id']}").doc[
                "snapshot"].get("hosts", [])
        except ApiError:
            snapshot_hosts = []
    return _page("plan.html", plan=doc, etag=answer.headers.get("ETag", ""),
                 page=pages.plan_page(doc, snapshot_hosts),
                 actions=[a for a, states in PLAN_ACTIONS.items()
                          if doc.get("status") in states and g.may(f"plan:{a}")])


def _front(result: dict[str, Any], pick: str | None) -> dict[str, Any] | None:
    """The front a job computed, as a chart whose points are links, and the picked point."""
    if not result.get("front"):
        return None
    points = [(name, i, p) for name, run in (result.get("front") or {}).items()
              for i, p in enumerate(run)]
    chosen = None
    drawn = []
    for name, i, p in points:
        key = f"{name}:{i}"
        label = (f"{name}: {_count(p.get('hosts_freed'), 'host')} freed for "
                 f"{_count(p.get('migrations'), 'migration')} "
                 f"({p.get('hosts_after')} left on)")
        picked = key == pick
        if picked:
            # The point's own algorithm when it is one -a names, else auto; within its
            # migrations (as 'plan --max-migrations N' after 'plan --front').
            chosen = {"key": key, "algorithm": name, **p, "label": label,
                      "plan_algorithm": "auto" if name in MADE_BY else name}
        drawn.append(charts.FrontPoint(label, int(p.get("hosts_freed") or 0),
                                       int(p.get("migrations") or 0),
                                       f"?pick={key}#front", picked))
    return {"chart": charts.front(drawn), "points": points,
            "chosen": chosen, "snapshot_id": result.get("snapshot_id")}


def _count(n: Any, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def plan_action(plan_id: str, action: str) -> Any:
    """A state change, with the ETag the page was read with. Refused here (403) when the
    policy refuses it; the API checks the policy and the ETag again."""
    if action not in PLAN_ACTIONS:
        return _http_error_of(404, f"no action {action!r} on a plan")
    if not g.may(f"plan:{action}"):
        return _http_error_of(403, f"plan {action} refused: the policy rule "
                                   f"consolidation:plan:{action} does not allow it to "
                                   f"{g.session.user_name} (roles "
                                   f"{', '.join(g.session.roles) or 'none'})")
    answer = g.api.call("POST", f"/v1/plans/{plan_id}/{action}", body={},
                        headers={"If-Match": request.form.get("etag", "")})
    if answer.status >= 400:
        raise ApiError(answer)
    if answer.status == 202:
        return redirect(url_for("job", job_id=answer.doc["job"]["id"]))
    return redirect(url_for("plan", plan_id=plan_id))


def _http_error_of(status: int, detail: str) -> Any:
    return render_template("error.html", status=status, detail=detail,
                           session=g.session), status


def plan_create() -> Any:
    """A new plan (or a front) from the form, or from a point picked on a front."""
    if not g.may("plan:create"):
        return _http_error_of(403, "plan create refused: the policy rule "
                                   "consolidation:plan:create does not allow it")
    body: dict[str, Any] = {}
    for key in ("algorithm", "snapshot_id", "scope"):
        if request.form.get(key):
            body[key] = request.form[key]
    for key in ("target_hosts", "max_migrations"):
        if request.form.get(key):
            body[key] = _whole(key, request.form[key])
    if request.form.get("front"):
        body["front"] = True
    answer = g.api.call("POST", "/v1/plans", body=body)
    if answer.status >= 400:
        raise ApiError(answer)
    return redirect(url_for("job", job_id=answer.doc["job"]["id"]))


def _whole(key: str, raw: str) -> Any:
    return int(raw) if raw.strip().isdigit() else raw   # the API names a bad one


def _job_state(job_id: str) -> dict[str, Any]:
    doc = g.api.get(f"/v1/jobs/{job_id}").doc["job"]
    plan_id = (doc.get("result") or {}).get("plan_id") or (
        doc.get("target") if doc.get("kind") in ("apply", "dry_run") else None)
    plan_doc, entries = None, []
    if plan_id and doc.get("kind") in ("apply", "dry_run", "rollback"):
        plan_doc = g.api.get(f"/v1/plans/{plan_id}").doc["plan"]
        entries = g.api.every("/v1/journal", "journal", plan_id=plan_id)
    moves = pages.job_moves(plan_doc, entries)
    return {"job": doc, "plan_id": plan_id, "moves": moves,
            "done": doc.get("state") in ("succeeded", "failed", "expired")}


def job(job_id: str) -> Any:
    state = _job_state(job_id)
    return _page("job.html", front=_front(state["job"].get("result") or {},
                                          request.args.get("pick")), **state)


def job_json(job_id: str) -> Any:
    """What the job page's script polls: the job and its moves' states."""
    state = _job_state(job_id)
    moves = state["moves"]
    return jsonify({"job": {k: state["job"].get(k) for k in
                            ("id", "kind", "state", "progress", "error", "result")},
                    "done": state["done"], "moves_done": moves.done, "moves": moves.total,
                    "states": {f"{m.wave}:{m.instance}": m.state
                               for _, wave in moves.waves for m in wave}})


def journal() -> Any:
    filters = {k: request.args.get(k, "").strip() for k in JOURNAL_FILTERS}
    rows = g.api.every("/v1/journal", "journal", **{k: v for k, v in filters.items() if v})
    return _page("journal.html", rows=rows[:2000], more=max(0, len(rows) - 2000),
                 filters=filters)


def history() -> Any:
    days = request.args.get("days", "7")
    report = g.api.get("/v1/report", days=days).doc["report"]
    on = [(p["time"][:16], float(p["hosts_on"])) for p in report.get("hosts_on", [])]
    cycles = [(c["time"][:16], float(c.get("migrations_done") or 0))
              for c in report.get("cycles", [])]
    energy = report.get("energy") or {}
    kwh = [("with consolidator", float(energy.get("kwh_policy") or 0)),
           ("every host on", float(energy.get("kwh_no_policy") or 0))]
    return _page("history.html", report=report, days=days, energy=energy,
                 on_chart=charts.step_line(on, title="Hosts on", y_label="hosts on",
                                           ident="on"),
                 cycle_chart=charts.bars(cycles, title="Migrations per cycle",
                                         y_label="migrations", ident="cycles"),
                 energy_chart=charts.bars(kwh, title="Energy over the period",
                                          y_label="kWh", ident="energy", css="bar energy"))
