"""An API-SIG error answer turned into the one line OSC prints: what was refused, and why (for
a policy refusal, the rule that refused it)."""

from __future__ import annotations

import re
from typing import Any

from osc_lib import exceptions

#: A policy rule's name as oslo.policy writes it ("consolidation:plan:approve").
_RULE = re.compile(r"\b[a-z_][\w-]*(?::[\w-]+)+\b")


def first_error(resp: Any) -> dict[str, Any]:
    """The first error of an API-SIG answer ({"errors": [...]}), or {} if the body is not one."""
    try:
        doc = resp.json()
    except ValueError:
        return {}
    if isinstance(doc, dict):
        errors = doc.get("errors")
        if isinstance(errors, list) and errors and isinstance(errors[0], dict):
            return errors[0]
        for value in doc.values():  # a Keystone-style {"error": {...}} or {"forbidden": {...}}
            if isinstance(value, dict) and ("message" in value or "detail" in value):
                return value
    return {}


def rule_of(error: dict[str, Any]) -> str | None:
    """The policy rule an error names: a `rule` field, else a rule name in its detail."""
    if error.get("rule"):
        return str(error["rule"])
    found = _RULE.search(f"{error.get('detail') or ''} {error.get('title') or ''}")
    return found.group(0) if found else None


def refusal(what: str, method: str, path: str, resp: Any) -> Exception:
    """The exception for an error answer; its message is one line."""
    error = first_error(resp)
    detail = " ".join(str(error.get("detail") or error.get("message") or
                          error.get("title") or resp.reason or "").split())
    status = resp.status_code
    if status == 403:
        rule = rule_of(error)
        named = f"; rule {rule}" if rule and rule not in detail else ""
        return exceptions.Forbidden(
            403, f"{what} refused by policy ({method} {path}): {detail}{named}")
    if status == 404:
        return exceptions.NotFound(404, f"{what}: not found ({method} {path}): {detail}")
    if status == 401:
        return exceptions.Unauthorized(401, f"{what}: not authenticated: {detail}")
    if status == 409:
        return exceptions.Conflict(409, f"{what} refused ({method} {path}): {detail}")
    return exceptions.CommandError(f"{what} failed with HTTP {status} ({method} {path}): "
                                   f"{detail}")
