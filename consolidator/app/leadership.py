"""Leadership: one active daemon per cloud, through a lease in the database."""

from __future__ import annotations

from consolidator.app.context import AppContext
from consolidator.store.leases import (
    Lease,
    LeaseHeldError,
    acquire,
    current,
    make_holder,
    release,
)


class Leadership:
    """This process's claim on a named lease."""

    def __init__(self, ctx: AppContext, name: str, ttl: float) -> None:
        self.ctx, self.name, self.ttl = ctx, name, ttl
        self.holder = make_holder()

    def hold(self) -> bool:
        """Take or renew the lease (expiry by the database's clock); True while this process
        holds it. A database error is raised (StoreError): the caller counts it as lost."""
        return acquire(self.ctx.engine(), self.name, self.holder, self.ttl) is not None

    def release(self) -> None:
        """Give the lease up."""
        release(self.ctx.engine(), self.name, self.holder)


def executor_lease_names(ctx: AppContext, cloud: str) -> list[str]:
    """The names of the cloud's executor lease: under its identity (which every clouds.yaml
    name of the cloud shares, read from the entry without a request) and under its name."""
    from consolidator.core.errors import ConsolidatorError
    from consolidator.execution.lease_keeper import executor_leases
    from consolidator.openstack.connection import cloud_identity

    try:
        key = cloud_identity(ctx.connect(cloud))
    except ConsolidatorError:      # no such entry: only its name can be looked up
        key = None
    return executor_leases(cloud, key)


def _executor_lease(ctx: AppContext, cloud: str) -> Lease | None:
    """The cloud's executor lease while someone holds it (under any of its names)."""
    for name in executor_lease_names(ctx, cloud):
        lease = current(ctx.engine(), name)
        if lease is not None:
            return lease
    return None


def executor_holder(ctx: AppContext, cloud: str | None) -> str | None:
    """Who holds the cloud's executor lease (an apply or a rollback is running), or None."""
    lease = _executor_lease(ctx, cloud or "default")
    return lease.holder if lease is not None else None


def refuse_while_executor_runs(ctx: AppContext, cloud: str) -> None:
    """Raise LeaseHeldError, naming the holder, while another executor holds the cloud's
    lease (under its identity or its name): checked before a plan is stored, approved or
    shown, so that a second apply or rollback leaves nothing behind. The executor takes the
    lease itself when it starts."""
    lease = _executor_lease(ctx, cloud)
    if lease is not None:
        raise LeaseHeldError(f"an executor for cloud {cloud!r} is already running: "
                             f"{lease.holder} (until {lease.expires_at:%H:%M:%S} UTC) holds "
                             f"lease {lease.name!r}")


def executor_cloud(ctx: AppContext) -> str:
    """The cloud name an executor of this context leases: the context's cloud, else the name
    openstacksdk gives its connection (what the plans and snapshots it stores are under)."""
    if ctx.cloud_name:
        return ctx.cloud_name
    from consolidator.openstack.connection import cloud_label

    return cloud_label(ctx.connect())
