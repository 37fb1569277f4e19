"""The options of the shared service: the daemon's jobs, [review] (four eyes), [api] and
[oslo_policy]; part of the schema of app/config.py."""

from __future__ import annotations

from consolidator.app.option import Option

SERVICE_OPTIONS: tuple[Option, ...] = (
    Option("daemon", "job_interval", float, 5.0,
           "Seconds between the daemon's looks for jobs the API recorded (a snapshot, a "
           "plan, an apply, a rollback, a drain, a power action); 0: the daemon runs no "
           "jobs.", range="[0, inf)"),
    Option("review", "distinct_approver", bool, False,
           "Four eyes: the user who made a plan (Keystone user through the API, OS user "
           "locally) cannot approve it."),
    Option("review", "require_approval", bool, False,
           "The daemon, the API and the local CLI refuse to apply a plan nobody approved "
           "('apply --yes' no longer approves one); refused at start together with "
           "[daemon] auto_apply."),
    Option("api", "bind", str, "127.0.0.1",
           "Address 'consolidator api' listens on (0.0.0.0 or :: for every interface; put a "
           "TLS proxy in front).", form="address"),
    Option("api", "port", int, 8779,
           "TCP port 'consolidator api' listens on.", range="[1, 65535]"),
    Option("api", "threads", int, 8,
           "Requests the API's WSGI server (waitress) serves at once.", range="[1, inf)"),
    Option("api", "service_cloud", str, "",
           "The clouds.yaml cloud whose credentials keystonemiddleware uses to validate "
           "tokens (its service user, which needs the service or admin role); empty: the "
           "managed cloud ([cloud] name, --cloud)."),
    Option("api", "auth_url", str, "",
           "Keystone's URL for token validation; empty: the service cloud's auth_url.",
           form="url"),
    Option("api", "job_timeout", float, 300.0,
           "Seconds a job may wait for a daemon to pick it up; then it is marked expired, "
           "saying so, and no daemon runs it late.", range="(0, inf)"),
    Option("api", "max_body_bytes", int, 65536,
           "The largest request body the API reads; a larger one gets 413.",
           range="[1, inf)"),
    Option("api", "max_limit", int, 1000,
           "The most items one page of a list holds (limit=).", range="[1, inf)"),
    Option("oslo_policy", "policy_file", str, "",
           "A YAML or JSON policy file overriding the API's rules (see docs/policy.rst; "
           "'oslopolicy-sample-generator --namespace consolidator' writes a sample); empty: "
           "/etc/consolidator/policy.yaml if present, else the defaults in code."),
    Option("oslo_policy", "enforce_scope", bool, True,
           "Refuse a token whose scope the rule does not allow (the rules are project "
           "scoped), as Nova does."),
    Option("oslo_policy", "enforce_new_defaults", bool, True,
           "Use the persona defaults (reader, member, admin) only; false also accepts the "
           "deprecated admin-only defaults, as Nova does."),
)
