"""The credentials a service validates Keystone tokens with, read from a clouds.yaml cloud
(its auth block), in the form keystonemiddleware's auth_token takes."""

from __future__ import annotations

from typing import Any

from consolidator.core.errors import CloudError

#: clouds.yaml auth keys keystonemiddleware's password plugin takes under the same name.
PASSWORD_KEYS = ("auth_url", "username", "password", "user_id", "project_name", "project_id",
                 "user_domain_name", "user_domain_id", "project_domain_name",
                 "project_domain_id")


def service_credentials(cloud: str) -> dict[str, Any]:
    """auth_type and its options for auth_token, from a clouds.yaml cloud's auth block;
    CloudError when the cloud is unknown or not a password cloud."""
    import openstack.config
    from openstack import exceptions as sdk_exc

    try:
        region = openstack.config.get_cloud_region(cloud=cloud)
    except sdk_exc.ConfigException as exc:
        raise CloudError(f"[api] service cloud {cloud!r}: {str(exc).splitlines()[0]} "
                         f"(check clouds.yaml or OS_CLIENT_CONFIG_FILE)") from None
    entry = dict(region.config)    # the clouds.yaml entry, not consolidator's config
    auth = dict(entry.get("auth") or {})
    auth_type = entry.get("auth_type") or "password"
    if auth_type not in ("password", "v3password") or not auth.get("auth_url"):
        raise CloudError(f"[api] service cloud {cloud!r}: auth_type {auth_type!r} without a "
                         f"password and auth_url cannot validate tokens; name a password "
                         f"cloud in [api] service_cloud")
    return {"auth_type": "password", **{k: str(auth[k]) for k in PASSWORD_KEYS
                                        if auth.get(k) is not None}}
