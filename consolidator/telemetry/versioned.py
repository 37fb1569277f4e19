"""Versioned notifications: each event as Nova and Watcher shape theirs on the message bus.

An event type (``consolidation.plan.create``...), a priority (info, or error for what
failed) and a payload that is a versioned object, serialised as oslo.versionedobjects does
under the project's own prefix, as Nova (``nova_object.*``) and Watcher
(``watcher_object.*``) do::

    {"consolidator_object.name": "PlanPayload",
     "consolidator_object.namespace": "consolidator",
     "consolidator_object.version": "1.0",
     "consolidator_object.data": {"plan_id": "...", "sequence": 42, ...}}

The JSON Schema of each payload is shipped beside this module (``schemas/NAME.json``); a
payload's minor version grows when a field is added, its major version when one changes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

PREFIX = "consolidator_object"
NAMESPACE = "consolidator"
INFO, ERROR = "info", "error"


@dataclass(frozen=True)
class Payload:
    """A payload object: its name, version and the event document's fields it carries."""

    name: str
    version: str
    fields: tuple[str, ...]


COMMON = ("sequence", "time", "cloud")
PLAN = Payload("PlanPayload", "1.0", (*COMMON, "plan_id", "kind", "status", "reason",
                                      "algorithm", "migrations", "power_off", "power_on",
                                      "drain"))
MIGRATION = Payload("MigrationPayload", "1.0", (*COMMON, "plan_id", "instance_id",
                                                "instance_name", "source", "destination",
                                                "wave", "state", "result", "elapsed_s"))
HOST = Payload("HostPayload", "1.0", (*COMMON, "plan_id", "host", "action", "state",
                                      "result", "powered_off", "powered_on", "reason"))
PAYLOADS = (PLAN, MIGRATION, HOST)

#: The project's event (journal and legacy webhook name) -> event type, payload, and the
#: priority unless its state failed.
EVENTS: dict[str, tuple[str, Payload, str]] = {
    "plan.proposed": ("consolidation.plan.create", PLAN, INFO),
    "plan.approved": ("consolidation.plan.approve", PLAN, INFO),
    "plan.cancelled": ("consolidation.plan.cancel", PLAN, INFO),
    "plan.started": ("consolidation.plan.apply.start", PLAN, INFO),
    "plan.succeeded": ("consolidation.plan.apply.end", PLAN, INFO),
    "plan.failed": ("consolidation.plan.apply.error", PLAN, ERROR),
    "migration.started": ("consolidation.migration.start", MIGRATION, INFO),
    "migration.succeeded": ("consolidation.migration.end", MIGRATION, INFO),
    "migration.failed": ("consolidation.migration.error", MIGRATION, ERROR),
    "power.off": ("consolidation.host.power_off", HOST, INFO),
    "power.on": ("consolidation.host.power_on", HOST, INFO),
    "host.drained": ("consolidation.host.drain", HOST, INFO),
    "host.undrained": ("consolidation.host.undrain", HOST, INFO),
    "host.rescued": ("consolidation.host.rescue", HOST, INFO),
}
#: The host events' action field.
HOST_ACTIONS = {"power.off": "power_off", "power.on": "power_on", "host.drained": "drain",
                "host.undrained": "undrain", "host.rescued": "rescue"}


@dataclass(frozen=True)
class Notification:
    """One versioned notification: what the bus carries besides oslo.messaging's envelope."""

    event_type: str
    priority: str
    payload: dict[str, Any]


def versioned(document: dict[str, Any]) -> Notification | None:
    """The versioned notification of an event document (app/notify.py); None for an event
    that has none."""
    known = EVENTS.get(str(document.get("event", "")))
    if known is None:
        return None
    event_type, payload, priority = known
    if document.get("state") == "failed":
        priority = ERROR
    fields = {**document, "action": HOST_ACTIONS.get(str(document.get("event")))}
    data = {name: _plain(fields.get(name)) for name in payload.fields}
    return Notification(event_type, priority, {
        f"{PREFIX}.name": payload.name, f"{PREFIX}.namespace": NAMESPACE,
        f"{PREFIX}.version": payload.version, f"{PREFIX}.data": data})


def _plain(value: Any) -> Any:
    """A JSON value: tuples as lists, anything else unknown as its string."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def schema(name: str) -> dict[str, Any]:
    """The shipped JSON Schema of a payload object (PlanPayload...)."""
    text = (resources.files("consolidator.telemetry") / "schemas" / f"{name}.json").read_text(
        encoding="utf-8")
    result: dict[str, Any] = json.loads(text)
    return result
