"""The dashboard beside the API in one WSGI application: the Keystone the API validates
tokens against signs people in, and the API's own policy (the same rules, policy file and
[oslo_policy] options) decides which buttons a page shows."""

from __future__ import annotations

from typing import Any

from consolidator.api.dashboard.app import make_dashboard, mount
from consolidator.api.dashboard.cookie import Session
from consolidator.api.dashboard.signin import Keystone
from consolidator.api.dashboard.upstream import Wsgi
from consolidator.app.context import AppContext
from consolidator.app.keystone_auth import token_validation_conf
from consolidator.app.settings import api_settings


def credentials(session: Session) -> Any:
    """The policy credentials of a signed-in person, as the API builds them from a token."""
    from oslo_context.context import RequestContext

    return RequestContext(user_id=session.user_id, user_name=session.user_name,
                          project_id=session.project_id, project_name=session.project_name,
                          roles=list(session.roles))


def with_dashboard(ctx: AppContext, api: Wsgi, enforcer: Any,
                   service_auth: dict[str, Any] | None = None) -> Wsgi:
    """The API application with the dashboard under /dashboard: enforcer is the API's own
    policy enforcer (its rules, policy file and [oslo_policy] options), service_auth as given
    to make_app, when the service credentials do not come from clouds.yaml."""
    settings = api_settings(ctx.config)
    auth = token_validation_conf(ctx, settings, service_auth)
    keystone = Keystone(auth_url=auth["www_authenticate_uri"],
                        project=auth.get("project_name", ""),
                        domain=auth.get("user_domain_name") or "Default")

    def may(rule: str, session: Session) -> bool:
        return bool(enforcer.authorize(f"consolidation:{rule}",
                                       {"project_id": session.project_id},
                                       credentials(session), do_raise=False))

    return mount(api, make_dashboard(api, keystone, may))
