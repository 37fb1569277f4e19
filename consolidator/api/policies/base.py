"""The personas every rule is made of: reader, operator (Keystone's member role) and
admin. Override these three to map consolidator's personas onto other roles."""

from __future__ import annotations

from oslo_policy import policy

PREFIX = "consolidation"
READER = "rule:consolidation_reader"
OPERATOR = "rule:consolidation_operator"
ADMIN = "rule:consolidation_admin"
#: The rules are project scoped, as Nova's are: a token scoped to the admin project.
SCOPES = ["project"]

RULES = [
    policy.RuleDefault(
        "consolidation_admin", "role:admin",
        "Admin: may also apply, roll back, drain and power hosts."),
    policy.RuleDefault(
        "consolidation_operator", "role:member or rule:consolidation_admin",
        "Operator (Keystone's member role): may also snapshot, plan, approve and cancel."),
    policy.RuleDefault(
        "consolidation_reader", "role:reader or rule:consolidation_operator",
        "Reader: sees every resource, never a secret."),
]


def rule(name: str, check: str, description: str, method: str, path: str
         ) -> policy.DocumentedRuleDefault:
    """One API rule: consolidation:<name>, for one operation."""
    return policy.DocumentedRuleDefault(
        name=f"{PREFIX}:{name}", check_str=check, description=description,
        operations=[{"method": method, "path": path}], scope_types=SCOPES)


def list_rules() -> list[policy.RuleDefault]:
    """The personas."""
    return list(RULES)
