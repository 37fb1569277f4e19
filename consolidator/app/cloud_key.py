"""The identity of the cloud a clouds.yaml name reaches: what every name of one cloud shares."""

from __future__ import annotations

from consolidator.app.context import AppContext


def cloud_key_of(ctx: AppContext, cloud: str | None) -> str | None:
    """The cloud's identity (its Keystone URL and region), read from its clouds.yaml entry
    without a request; None when the entry cannot be read (then only its name is known)."""
    from consolidator.core.errors import ConsolidatorError
    from consolidator.openstack.connection import cloud_identity

    try:
        conn = ctx.connect(cloud)
    except ConsolidatorError:
        return None
    return cloud_identity(conn) if conn is not None else None
