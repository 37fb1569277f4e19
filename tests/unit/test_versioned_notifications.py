"""The versioned notifications: every event maps to an event type, a payload valid against
its shipped schema and a priority; docs/notifications.rst lists every event type, and its
examples are valid payloads."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from consolidator.telemetry.versioned import EVENTS, PAYLOADS, schema, versioned
from consolidator.telemetry.webhook import cloud_event

DOC = Path(__file__).resolve().parents[2] / "docs" / "notifications.rst"
BASE = {"sequence": 7, "time": "2026-11-28T10:00:00+00:00", "cloud": "prod", "plan_id": "p1"}
FIELDS = {
    "PlanPayload": {"kind": "drain", "status": "running", "reason": "started",
                    "algorithm": "drain", "migrations": 2, "power_off": ("h1",),
                    "power_on": (), "drain": ["h1"]},
    "MigrationPayload": {"instance_id": "i1", "instance_name": "vm", "source": "h1",
                         "destination": "h2", "wave": 1, "state": "started", "result": None,
                         "elapsed_s": 0.0},
    "HostPayload": {"host": "h1", "state": "succeeded", "result": "the BMC reads off"},
}


def valid(payload: dict) -> list[str]:
    validator = Draft202012Validator(schema(payload["consolidator_object.name"]),
                                     format_checker=Draft202012Validator.FORMAT_CHECKER)
    return [e.message for e in validator.iter_errors(payload)]


@pytest.mark.parametrize("event", sorted(EVENTS))
def test_each_event_is_a_valid_versioned_notification(event: str) -> None:
    event_type, payload, priority = EVENTS[event]
    note = versioned({"event": event, **BASE, **FIELDS[payload.name]})
    assert note is not None and note.event_type == event_type
    assert event_type.startswith("consolidation.")
    assert note.priority == priority
    assert valid(note.payload) == []
    assert note.payload["consolidator_object.data"]["sequence"] == 7


def test_a_failed_state_is_an_error_and_an_unknown_field_is_refused() -> None:
    note = versioned({"event": "power.off", **BASE, **FIELDS["HostPayload"], "state": "failed"})
    assert note is not None and note.priority == "error"
    note.payload["consolidator_object.data"]["surprise"] = 1
    assert valid(note.payload) != []


def test_a_cloud_event_carries_the_sequence_and_the_payload() -> None:
    body, kind = cloud_event({"event": "migration.failed", **BASE,
                              **FIELDS["MigrationPayload"], "state": "failed"})
    event = json.loads(body)
    assert kind == "application/cloudevents+json"
    assert (event["specversion"], event["type"], event["id"], event["sequence"],
            event["priority"], event["subject"]) == (
        "1.0", "consolidation.migration.error", "7", 7, "error", "i1")
    assert valid(event["data"]) == []


def test_the_docs_list_every_event_type_and_their_examples_are_valid() -> None:
    text = DOC.read_text()
    for event_type, _payload, _priority in EVENTS.values():
        assert f"``{event_type}``" in text, event_type
    for payload in PAYLOADS:
        assert f"schemas/{payload.name}.json" in text
    blocks = re.findall(r"\.\. code-block:: json\n\n((?:    .*\n|\n)+)", text)
    checked = 0
    for block in blocks:
        document = json.loads(block)
        payload = document.get("payload", document)
        if "consolidator_object.name" in payload and "..." not in block:
            assert valid(payload) == [], block
            checked += 1
    assert checked == 3
