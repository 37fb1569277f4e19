"""Fault rules: failed or hanging migrations, HTTP errors, slow responses and BMC faults."""

from __future__ import annotations

import fnmatch
import threading
from collections.abc import Mapping
from typing import Any

from consolidator.core.errors import ScenarioError

#: Keys each fault type accepts: (required, optional).
FAULT_KEYS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "migration_fails": (frozenset({"instance"}), frozenset({"count"})),
    "migration_hangs": (frozenset({"instance"}), frozenset({"count"})),
    "migration_slow": (frozenset({"instance", "seconds"}), frozenset({"count"})),
    "migration_lands_elsewhere": (frozenset({"instance"}), frozenset({"count"})),
    "http_error": (frozenset({"path", "status"}),
                   frozenset({"method", "count", "message", "retry_after"})),
    "slow": (frozenset({"seconds"}), frozenset({"path", "method", "count"})),
    "bmc_auth_fails": (frozenset({"host"}), frozenset()),
    "bmc_unreachable": (frozenset({"host"}), frozenset()),
    "bmc_busy": (frozenset({"host"}), frozenset({"count"})),
    "bmc_drops_logins": (frozenset({"host", "count"}), frozenset()),
    "bmc_no_power_reading": (frozenset({"host"}), frozenset()),
    "bmc_shutdown_held": (frozenset({"host"}), frozenset()),
    "bmc_vanishes_after_off": (frozenset({"host"}), frozenset()),
    "bmc_shutdown_not_cancelled": (frozenset({"host"}), frozenset()),
}


def validate_fault(raw: Any) -> dict[str, Any]:
    """Check one fault dict and return it normalised (method upper-case, count or None)."""
    if not isinstance(raw, Mapping):
        raise ScenarioError(f"fault: expected a mapping, got {raw!r}")
    kind = raw.get("type")
    if kind not in FAULT_KEYS:
        raise ScenarioError(f"fault {dict(raw)!r}: type must be one of "
                            f"{', '.join(FAULT_KEYS)}")
    required, optional = FAULT_KEYS[kind]
    missing = required - set(raw)
    if missing:
        raise ScenarioError(f"fault {dict(raw)!r}: missing key {sorted(missing)[0]!r}")
    unknown = set(raw) - required - optional - {"type"}
    if unknown:
        raise ScenarioError(f"fault {dict(raw)!r}: unknown key {sorted(unknown)[0]!r}")
    rule = dict(raw)
    rule["method"] = str(rule.get("method") or "*").upper()
    rule.setdefault("path", "*")
    count = rule.get("count")
    if count is not None and (not isinstance(count, int) or isinstance(count, bool)
                              or count < 1):
        raise ScenarioError(f"fault {dict(raw)!r}: count must be a positive integer")
    rule["count"] = count
    if kind == "http_error" and (not isinstance(rule["status"], int)
                                 or not 400 <= rule["status"] <= 599):
        raise ScenarioError(f"fault {dict(raw)!r}: status must be an HTTP error code")
    if kind in ("slow", "migration_slow") and (not isinstance(rule["seconds"], (int, float))
                           or rule["seconds"] < 0):
        raise ScenarioError(f"fault {dict(raw)!r}: seconds must be a non-negative number")
    return rule


class Faults:
    """The active fault rules; matching a rule with a count uses one of its shots."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rules: list[dict[str, Any]] = []

    def add(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """Validate and add a rule; return it normalised."""
        rule = validate_fault(raw)
        with self._lock:
            self._rules.append(rule)
        return dict(rule)

    def clear(self) -> None:
        """Remove every rule."""
        with self._lock:
            self._rules.clear()

    def rules(self) -> list[dict[str, Any]]:
        """A copy of the active rules, remaining counts included."""
        with self._lock:
            return [dict(r) for r in self._rules]

    def _take(self, kind: str, test: Any) -> dict[str, Any] | None:
        """The first rule of a kind that passes test, one shot used; None if none."""
        with self._lock:
            for rule in self._rules:
                if rule["type"] == kind and test(rule):
                    if rule["count"] is not None:
                        rule["count"] -= 1
                        if rule["count"] == 0:
                            self._rules.remove(rule)
                    return dict(rule)
        return None

    def http_error(self, method: str, path: str) -> dict[str, Any] | None:
        """The http_error rule that applies to this request, if any."""
        return self._take("http_error", lambda r: _matches(r, method, path))

    def delay(self, method: str, path: str) -> float:
        """Seconds a slow rule delays this request (0 if none)."""
        rule = self._take("slow", lambda r: _matches(r, method, path))
        return float(rule["seconds"]) if rule else 0.0

    def migration_fault(self, server_id: str, name: str) -> str | None:
        """'fails', 'hangs', 'elsewhere' or 'slow <seconds>' when a rule names this server
        (by name or id), else None."""
        for kind, effect in (("migration_fails", "fails"), ("migration_hangs", "hangs"),
                             ("migration_lands_elsewhere", "elsewhere"),
                             ("migration_slow", "slow")):
            rule = self._take(kind, lambda r: str(r["instance"]) in (server_id, name))
            if rule:
                return f"slow {rule['seconds']}" if effect == "slow" else effect
        return None

    def bmc_shot(self, kind: str, host: str) -> bool:
        """Whether a BMC fault of this kind names the host; one of its shots is used."""
        return self._take(kind, lambda r: str(r["host"]) == host) is not None

    def bmc_fault(self, kind: str, host: str) -> bool:
        """Whether a BMC fault of this kind names the host (it lasts until cleared)."""
        with self._lock:
            return any(r["type"] == kind and str(r["host"]) == host for r in self._rules)


def _matches(rule: Mapping[str, Any], method: str, path: str) -> bool:
    return rule["method"] in ("*", method) and fnmatch.fnmatchcase(path, rule["path"])
