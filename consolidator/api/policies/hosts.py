"""Rules of the hosts: reading them, draining, undraining and powering them."""

from __future__ import annotations

from oslo_policy import policy

from consolidator.api.policies.base import ADMIN, READER, rule

RULES = [
    rule("host:list", READER, "List the hosts as last recorded.", "GET", "/v1/hosts"),
    rule("host:get", READER, "Show a host.", "GET", "/v1/hosts/{name}"),
    rule("host:drain", ADMIN, "Ask for a drain plan of a host (a job).", "POST",
         "/v1/hosts/{name}/drain"),
    rule("host:undrain", ADMIN, "Ask the daemon to bring a drained host back (a job).",
         "POST", "/v1/hosts/{name}/undrain"),
    rule("host:power", ADMIN, "Ask the daemon to power a host on or off (a job).", "POST",
         "/v1/hosts/{name}/power"),
]


def list_rules() -> list[policy.RuleDefault]:
    """The rules of this module."""
    return list(RULES)
