"""What the views share: reading the body and the paging query, answering a list, a job."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from flask import Response, jsonify, request

from consolidator.api import bodies, conventions
from consolidator.api.service import service

T = TypeVar("T")


def body(fields: dict[str, bodies.Field]) -> dict[str, Any]:
    """The request's JSON body, checked against its fields."""
    most = service().settings.max_body_bytes
    length = request.content_length
    if length is not None and length > most:
        return bodies.parse(b" " * (most + 1), None, fields, most=most)
    raw = request.stream.read(most + 1)
    return bodies.parse(raw, request.content_type, fields, most=most)


def query(*allowed: str) -> dict[str, str]:
    """The query's parameters; 400 naming an unknown one."""
    known = {"limit", "marker", *allowed}
    for name in request.args:
        if name not in known:
            from consolidator.api.errors import bad_field

            raise bad_field(name, f"unknown query parameter: the parameters are "
                                  f"{', '.join(sorted(known))}")
    return {k: v for k, v in request.args.items()}


def listing(name: str, rows: Iterable[T], key: Callable[[T], str],
            view: Callable[[T], dict[str, Any]], args: dict[str, str]) -> Response:
    """A page of a collection, with its next link."""
    limit = conventions.limit_of(args.get("limit"), service().settings.max_limit)
    chosen, more = conventions.page(rows, key, limit=limit, marker=args.get("marker"),
                                    kind=name.rstrip("s"))
    links = conventions.next_links(request.base_url, {**args, "limit": limit},
                                   key(chosen[-1]) if chosen else None, more)
    return jsonify({name: [view(r) for r in chosen], f"{name}_links": links})


def accepted(job: Any) -> Response:
    """202 with the job's URL (Location) and the job."""
    response = jsonify({"job": job_view(job)})
    response.status_code = 202
    response.headers["Location"] = f"{request.host_url.rstrip('/')}/v1/jobs/{job.id}"
    return response


def job_view(job: Any) -> dict[str, Any]:
    """A job as JSON: its state, progress and result; who asked."""
    requester = dict(job.requester)
    return {"id": job.id, "kind": job.kind, "target": job.target, "state": job.state,
            "params": job.params, "created_at": conventions.iso(job.created_at),
            "updated_at": conventions.iso(job.updated_at),
            "started_at": conventions.iso(job.started_at),
            "finished_at": conventions.iso(job.finished_at), "progress": job.progress,
            "result": job.result, "error": job.error, "requester": requester,
            "links": [{"rel": "self", "href": f"/v1/jobs/{job.id}"}]}
