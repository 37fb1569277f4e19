"""The policy enforcer: the rules in code, a policy file's overrides, and [oslo_policy]
enforce_scope and enforce_new_defaults, over an oslo.config object of the API's own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from oslo_config import cfg
from oslo_policy import opts as policy_opts
from oslo_policy import policy

from consolidator.api.errors import ApiError
from consolidator.api.policies import list_rules

DEFAULT_POLICY_FILE = "/etc/consolidator/policy.yaml"


def make_conf(*, policy_file: str, enforce_scope: bool, enforce_new_defaults: bool
              ) -> cfg.ConfigOpts:
    """An oslo.config object holding [oslo_policy] as the consolidator config sets it."""
    conf = cfg.ConfigOpts()
    conf([], project="consolidator", default_config_files=[], default_config_dirs=[])
    policy_opts.set_defaults(conf, policy_file=policy_file or DEFAULT_POLICY_FILE,
                             enforce_scope=enforce_scope,
                             enforce_new_defaults=enforce_new_defaults)
    return conf


def make_enforcer(conf: cfg.ConfigOpts) -> policy.Enforcer:
    """An enforcer with every rule registered; a named policy file must exist."""
    path = conf.oslo_policy.policy_file
    if path != DEFAULT_POLICY_FILE and not Path(path).is_file():
        from consolidator.core.errors import ConfigError

        raise ConfigError(f"[oslo_policy] policy_file = {path!r}: no such file")
    enforcer = policy.Enforcer(conf)
    enforcer.register_defaults(list_rules())
    enforcer.load_rules()
    return enforcer


def get_enforcer() -> policy.Enforcer:
    """The oslo.policy.enforcer entry point: the defaults over the default policy file, for
    oslopolicy-policy-generator and oslopolicy-list-redundant."""
    return make_enforcer(make_conf(policy_file="", enforce_scope=True,
                                   enforce_new_defaults=True))


def authorize(enforcer: policy.Enforcer, rule: str, credentials: Any,
              target: dict[str, Any]) -> None:
    """403 when the policy refuses the rule to these credentials (or their token's scope)."""
    try:
        enforcer.authorize(f"consolidation:{rule}", target, credentials, do_raise=True)
    except policy.InvalidScope:
        raise ApiError(403, "bad_scope", "Forbidden",
                       f"consolidation:{rule} needs a project-scoped token") from None
    except policy.PolicyNotAuthorized:
        raise ApiError(403, "forbidden", "Forbidden",
                       f"policy does not allow consolidation:{rule} to your roles") from None
