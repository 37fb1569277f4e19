"""How the API validates tokens: keystonemiddleware's auth_token options from [api] and
the service cloud's clouds.yaml entry."""

from __future__ import annotations

from typing import Any

from consolidator.app.context import AppContext
from consolidator.app.settings import ApiSettings
from consolidator.openstack.service_auth import service_credentials


def token_validation_conf(ctx: AppContext, settings: ApiSettings,
                          credentials: dict[str, Any] | None = None) -> dict[str, Any]:
    """auth_token's options: the service user's credentials ([api] service_cloud, else the
    managed cloud), Keystone's URL ([api] auth_url, else the cloud's), the public interface
    and an in-memory token cache. credentials, when given, replace clouds.yaml's."""
    cloud = settings.service_cloud or ctx.cloud_name or ""
    options = dict(credentials) if credentials is not None else service_credentials(cloud)
    if settings.auth_url:
        options["auth_url"] = settings.auth_url
    options.update(www_authenticate_uri=options["auth_url"], interface="public",
                   log_name="consolidator.api.auth_token", include_service_catalog=False)
    return options
