"""The API's policy rules, in code, with defaults for OpenStack's personas (reader, member,
admin). list_rules() is the oslo.policy.policies entry point of the namespace
'consolidator': oslopolicy-sample-generator and oslopolicy-checker read it."""

from __future__ import annotations

from oslo_policy import policy

from consolidator.api.policies import base, hosts, plans, records


def list_rules() -> list[policy.RuleDefault]:
    """Every rule, the base personas first."""
    return [*base.list_rules(), *plans.list_rules(), *hosts.list_rules(),
            *records.list_rules()]
