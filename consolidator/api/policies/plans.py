"""Rules of snapshots, plans and their state changes."""

from __future__ import annotations

from oslo_policy import policy

from consolidator.api.policies.base import ADMIN, OPERATOR, READER, rule

RULES = [
    rule("snapshot:list", READER, "List snapshots.", "GET", "/v1/snapshots"),
    rule("snapshot:get", READER, "Show a snapshot.", "GET", "/v1/snapshots/{snapshot_id}"),
    rule("snapshot:create", OPERATOR, "Ask the daemon for a snapshot of the cloud (a job).",
         "POST", "/v1/snapshots"),
    rule("plan:list", READER, "List plans.", "GET", "/v1/plans"),
    rule("plan:get", READER, "Show a plan.", "GET", "/v1/plans/{plan_id}"),
    rule("plan:create", OPERATOR, "Ask for a plan (a job): algorithm, ranking, budget, front, "
                                  "scope.", "POST", "/v1/plans"),
    rule("plan:approve", OPERATOR, "Approve a proposed plan.", "POST",
         "/v1/plans/{plan_id}/approve"),
    rule("plan:cancel", OPERATOR, "Cancel a plan that has not started.", "POST",
         "/v1/plans/{plan_id}/cancel"),
    rule("plan:dry_run", OPERATOR, "Ask for a dry run of a plan on a simulated cloud "
                                   "(a job).", "POST", "/v1/plans/{plan_id}/dry-run"),
    rule("plan:apply", ADMIN, "Ask the daemon to apply an approved plan (a job).", "POST",
         "/v1/plans/{plan_id}/apply"),
]


def list_rules() -> list[policy.RuleDefault]:
    """The rules of this module."""
    return list(RULES)
