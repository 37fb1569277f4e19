"""Leadership: one active daemon per cloud, through a lease in the database."""

from __future__ import annotations

from consolidator.app.context import AppContext
from consolidator.store.leases import acquire, current, make_holder, release


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


def executor_holder(ctx: AppContext, cloud: str | None) -> str | None:
    """Who holds the cloud's executor lease (an apply or a rollback is running), or None."""
    lease = current(ctx.engine(), f"executor:{cloud or 'default'}")
    return lease.holder if lease is not None else None
