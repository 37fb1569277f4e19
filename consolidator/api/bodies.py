"""Request bodies: a JSON object of known fields, each of its type; anything else is a 400
that names the field, and nothing is stored."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from consolidator.api.errors import ApiError, bad_field, shorten


@dataclass(frozen=True)
class Field:
    """One body field: its JSON type, whether it is required, its bounds or choices."""

    kind: type
    required: bool = False
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    max_length: int = 255


def parse(raw: bytes, content_type: str | None, fields: dict[str, Field], *,
          most: int) -> dict[str, Any]:
    """The body's fields, checked; an empty body is an empty object."""
    if len(raw) > most:
        raise ApiError(413, "body_too_large", "Payload Too Large",
                       f"the body is {len(raw)} bytes; the most this API reads is {most} "
                       f"([api] max_body_bytes)")
    if not raw.strip():
        document: Any = {}
    else:
        if content_type is not None and "json" not in content_type.lower():
            raise ApiError(415, "not_json", "Unsupported Media Type",
                           f"Content-Type {content_type!r}: send application/json")
        try:
            document = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ApiError(400, "malformed_json", "Bad Request",
                           f"the body is not valid JSON: {exc}") from None
        except RecursionError:
            raise ApiError(400, "malformed_json", "Bad Request",
                           "the body nests arrays or objects deeper than this API reads: send "
                           "the fields of docs/api.rst, none nested more than a few levels"
                           ) from None
    if not isinstance(document, dict):
        raise ApiError(400, "not_an_object", "Bad Request",
                       f"the body must be a JSON object, not {type(document).__name__}")
    unknown = sorted(set(document) - set(fields))
    if unknown:
        raise bad_field(unknown[0], f"unknown field: the fields are "
                                    f"{', '.join(sorted(fields)) or 'none'}")
    for name, spec in fields.items():
        if name not in document or document[name] is None:
            if spec.required:
                raise bad_field(name, "is required")
            continue
        check(name, document[name], spec)
    return {k: v for k, v in document.items() if v is not None}


def check(name: str, value: Any, spec: Field) -> None:
    """400 naming the field when the value is not of its type, bounds or choices."""
    kind = spec.kind
    names = {str: "a string", int: "a whole number", float: "a number", bool: "true or false",
             dict: "an object", list: "a list"}
    wrong = isinstance(value, bool) and kind is not bool
    if kind is float:
        ok = isinstance(value, (int, float)) and not wrong and math.isfinite(value)
    else:
        ok = isinstance(value, kind) and not wrong
    if not ok:
        raise bad_field(name, f"must be {names[kind]}, not {json.dumps(value)[:40]}")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if spec.minimum is not None and value < spec.minimum:
            raise bad_field(name, f"must be at least {spec.minimum:g}, "
                                  f"not {shorten(str(value))}")
        if spec.maximum is not None and value > spec.maximum:
            raise bad_field(name, f"must be at most {spec.maximum:g}, "
                                  f"not {shorten(str(value))}")
    if isinstance(value, str):
        if spec.choices and value not in spec.choices:
            raise bad_field(name, f"{value!r} is not one of {', '.join(spec.choices)}")
        if len(value) > spec.max_length:
            raise bad_field(name, f"is longer than {spec.max_length} characters")
    if isinstance(value, (dict, list)) and len(json.dumps(value)) > 4096:
        raise bad_field(name, "is larger than 4096 bytes")
    if isinstance(value, list) and not all(isinstance(v, str) for v in value):
        raise bad_field(name, "must be a list of strings")
