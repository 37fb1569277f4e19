"""Snapshots as documents: the JSON of 'snapshots list' and 'show', and the scenario file
'snapshots export' writes."""

from __future__ import annotations

from typing import Any

from consolidator.app.context import AppContext
from consolidator.app.snapshots import get_snapshot
from consolidator.scenario.files import cluster_to_document, dump_document
from consolidator.store.snapshots import Snapshot


def info_json(info: object) -> dict[str, Any]:
    """The JSON form of a snapshot's header."""
    data = dict(vars(info))
    data["taken_at"] = data["taken_at"].isoformat()
    return data


def snapshot_json(snap: Snapshot) -> dict[str, Any]:
    """The JSON form of a snapshot: its header, every field of its cluster, and the power
    readings of its hosts' BMCs."""
    return {**info_json(snap.info), **cluster_to_document(snap.cluster, full=True),
            "power_readings": [vars(r) for r in snap.readings]}


def export_snapshot(ctx: AppContext, ref: str, output: str | None,
                    fmt: str | None) -> tuple[str, str]:
    """Write a snapshot as a scenario file (to output, if given); its id and the text."""
    snap = get_snapshot(ctx, ref)
    doc = cluster_to_document(snap.cluster, {"name": snap.info.cloud})
    return snap.info.id, dump_document(doc, output, fmt)
