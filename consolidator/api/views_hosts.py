"""/v1/hosts: the hosts as last recorded (the newest snapshot and the states consolidator
keeps), and drain, undrain and power, each a job for the daemon."""

from __future__ import annotations

from typing import Any

from flask import Flask, Response, jsonify

from consolidator.api import conventions
from consolidator.api.bodies import Field
from consolidator.api.errors import not_found
from consolidator.api.service import allow, context, service
from consolidator.api.views import accepted, body, listing, query
from consolidator.app import records
from consolidator.app.jobs import request_job


def register(app: Flask) -> None:
    """The routes of hosts."""
    app.add_url_rule("/v1/hosts", "hosts", list_hosts, methods=["GET"])
    app.add_url_rule("/v1/hosts/<name>", "host", show_host, methods=["GET"])
    for action in ("drain", "undrain", "power"):
        app.add_url_rule(f"/v1/hosts/<name>/{action}", f"host_{action}", host_action,
                         methods=["POST"], defaults={"action": action})


def _hosts() -> tuple[Any, list[dict[str, Any]]]:
    info, rows = records.hosts(context(), service().cloud)
    as_of = conventions.iso(info.taken_at)
    for row in rows:
        row.update(recorded_since=conventions.iso(row["recorded_since"]), as_of=as_of,
                   snapshot_id=info.id)
    return info, rows


def list_hosts() -> Response:
    """GET /v1/hosts (az=, status=)."""
    allow("host:list")
    args = query("availability_zone", "status")
    _, rows = _hosts()
    rows = [r for r in rows if all(r[k] == args[k] for k in ("availability_zone", "status")
                                   if k in args)]
    return listing("hosts", rows, lambda r: r["name"], lambda r: r, args)


def _host(name: str) -> dict[str, Any]:
    _, rows = _hosts()
    for row in rows:
        if name in (row["name"], row["compute_host"]):
            return row
    raise not_found("host", name)


def show_host(name: str) -> Response:
    """GET /v1/hosts/{name}."""
    allow("host:get")
    query()
    return jsonify({"host": _host(name)})


FIELDS = {"drain": {"power_off": Field(bool)}, "undrain": {},
          "power": {"action": Field(str, required=True, choices=("on", "off"))}}


def host_action(name: str, action: str) -> Response:
    """POST /v1/hosts/{name}/drain|undrain|power: a job."""
    allow(f"host:{action}")
    fields = body(FIELDS[action])
    host = _host(name)["name"]
    svc = service()
    if action == "power":
        kind, params = f"power_{fields['action']}", {}
    else:
        kind, params = action, {"hosts": [host], **fields}
    return accepted(request_job(context(), cloud=svc.cloud, kind=kind, target=host,
                                params=params))
