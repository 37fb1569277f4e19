"""Rules of the records: rollbacks, the journal, the report and jobs."""

from __future__ import annotations

from oslo_policy import policy

from consolidator.api.policies.base import ADMIN, READER, rule

RULES = [
    rule("rollback:list", READER, "List rollback plans.", "GET", "/v1/rollbacks"),
    rule("rollback:create", ADMIN, "Ask the daemon to roll the cloud back to a snapshot "
                                   "(a job).", "POST", "/v1/rollbacks"),
    rule("journal:list", READER, "Read the journal.", "GET", "/v1/journal"),
    rule("report:get", READER, "Read the report.", "GET", "/v1/report"),
    rule("job:list", READER, "List jobs.", "GET", "/v1/jobs"),
    rule("job:get", READER, "Show a job.", "GET", "/v1/jobs/{job_id}"),
]


def list_rules() -> list[policy.RuleDefault]:
    """The rules of this module."""
    return list(RULES)
