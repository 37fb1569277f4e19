"""Leadership: one active daemon per cloud, through a lease in the database."""

from __future__ import annotations

from collections.abc import Callable

from consolidator.app.cloud_key import cloud_key_of
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
    """This process's claim on a lease held under several names at once (one cloud's names:
    its identity first, then its clouds.yaml name), all or none. The names may be given by a
    callable, asked at each hold (so that a daemon is made without reading its cloud)."""

    def __init__(self, ctx: AppContext, names: str | list[str] | Callable[[], list[str]],
                 ttl: float, *, label: str | None = None) -> None:
        if callable(names):
            self._names = names
        else:
            fixed = [names] if isinstance(names, str) else list(dict.fromkeys(names))
            self._names = lambda: fixed
            label = label or fixed[0]
        self.ctx, self.ttl = ctx, ttl
        #: The lease's name to show (its first name, or the label given).
        self.name = label or ""
        self.holder = make_holder()
        self._used: dict[str, None] = {}     # every name this process took, in order

    def hold(self) -> bool:
        """Take or renew every name of the lease (expiry by the database's clock); True while
        this process holds them all. When another holder has one, the ones taken now are
        given back. A database error is raised (StoreError): the caller counts it as lost."""
        engine = self.ctx.engine()
        taken: list[str] = []
        for name in self._names():
            if acquire(engine, name, self.holder, self.ttl) is None:
                for mine in taken:
                    release(engine, mine, self.holder)
                return False
            taken.append(name)
            self._used[name] = None
        return True

    def release(self) -> None:
        """Give the lease up, under every name it was taken under."""
        for name in self._used:
            release(self.ctx.engine(), name, self.holder)


class DaemonLeaseNames:
    """The names of the cloud's daemon (leadership) lease: ``daemon:<identity>``, which
    every clouds.yaml name of the cloud shares, then ``daemon:<name>`` (which an older
    release's daemon holds). The identity is looked up at the first hold, not when the
    daemon is made (making a connection may wait on the cloud), and kept once found."""

    def __init__(self, ctx: AppContext, cloud: str | None) -> None:
        self.ctx, self.cloud = ctx, cloud
        self.key: str | None = None
        #: The name-only lease's name (what the daemon shows before its first hold).
        self.label = f"daemon:{cloud or 'default'}"

    def __call__(self) -> list[str]:
        """The names, the identity's first (only the name's while it cannot be read)."""
        if self.key is None:
            self.key = cloud_key_of(self.ctx, self.cloud)
        return list(dict.fromkeys([f"daemon:{self.key}" if self.key else self.label,
                                   self.label]))


def executor_lease_names(ctx: AppContext, cloud: str) -> list[str]:
    """The names of the cloud's executor lease: under its identity (which every clouds.yaml
    name of the cloud shares, read from the entry without a request) and under its name."""
    from consolidator.execution.lease_keeper import executor_leases

    return executor_leases(cloud, cloud_key_of(ctx, cloud))


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
