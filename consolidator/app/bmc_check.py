"""Reading every BMC: the identity of the system each bmc.yaml entry reaches, its power, and
whether that agrees with Nova (BMC on exactly when nova-compute reports up). It is how an
operator finds the identity to put in bmc.yaml (system_uuid, system_guid...), and how a
mis-wired entry (one that reaches another host's system) shows before it powers anything."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from consolidator.app.context import AppContext, host_driver
from consolidator.app.snapshots import read_cloud
from consolidator.core.errors import ConsolidatorError
from consolidator.core.model import Host
from consolidator.execution.bmc_preflight import shared_system
from consolidator.openstack.nova import Nova
from consolidator.power.driver import identity_mismatch

#: BMCs read at once.
MAX_READERS = 16


@dataclass
class BmcCheck:
    """One host: what its BMC reports, what Nova reports, and whether they agree."""

    host: str
    driver: str = "-"
    power: str = "-"
    identity: dict[str, str] = field(default_factory=dict)
    expected: dict[str, str] = field(default_factory=dict)
    nova: str = "?"
    #: Why the BMC or its entry is wrong (a failed read, a mismatch, another host's system).
    problem: str | None = None

    @property
    def agrees(self) -> bool | None:
        """BMC on exactly when nova-compute reports up; None without a BMC entry."""
        if self.driver == "-":
            return None
        return self.problem is None and (self.power == "on") == (self.nova == "up")

    def as_dict(self) -> dict[str, object]:
        """The JSON form."""
        return {"host": self.host, "driver": self.driver, "power": self.power,
                "identity": self.identity, "expected_identity": self.expected,
                "nova": self.nova, "agrees": self.agrees, "problem": self.problem}


def _read(host: Host, driver: object, nova_state: str) -> BmcCheck:
    config = getattr(driver, "config", None)
    check = BmcCheck(host.name, getattr(config, "driver", "?"), nova=nova_state)
    try:
        check.power = driver.power_state()  # type: ignore[attr-defined]
        check.identity = driver.identity()  # type: ignore[attr-defined]
    except ConsolidatorError as exc:
        check.power = check.power if check.power != "-" else "unknown"
        check.problem = str(exc)
        return check
    check.expected = driver.expected_identity()  # type: ignore[attr-defined]
    check.problem = identity_mismatch(check.expected, check.identity)
    return check


def check_bmcs(ctx: AppContext) -> list[BmcCheck]:
    """Every compute host of the cloud, its BMC read (in parallel) and compared with Nova;
    an entry that gives no identity must not reach a system another entry reaches too."""
    hosts = read_cloud(ctx).cluster.hosts
    services = Nova(ctx.connect()).services()
    lookup = ctx.power_lookup()
    pairs = [(h, host_driver(lookup, h)) for h in hosts]

    def one(pair: tuple[Host, object]) -> BmcCheck:
        host, driver = pair
        state = (services.get(host.compute_host) or {}).get("state") or "?"
        return BmcCheck(host.name, nova=state) if driver is None else _read(host, driver, state)

    with ThreadPoolExecutor(max_workers=max(1, min(MAX_READERS, len(pairs)))) as pool:
        checks = list(pool.map(one, pairs))
    seen = {c.host: c.identity for c in checks if c.identity}
    for host, check in zip(hosts, checks, strict=True):
        if check.problem is None and check.identity and not check.expected:
            check.problem = shared_system(host, check.identity, seen, hosts)
    return checks + stray_entries(ctx, hosts)


def stray_entries(ctx: AppContext, hosts: Sequence[Host]) -> list[BmcCheck]:
    """A row for each bmc.yaml entry whose name is no compute host's (hypervisor or
    nova-compute host name): a typo that would leave the host it meant without a BMC."""
    from pathlib import Path

    from consolidator.power.bmc_file import load_bmc_file

    path = ctx.bmc_path()
    if not Path(path).exists():
        return []
    names = {h.name for h in hosts} | {h.compute_host for h in hosts if h.compute_host}
    return [BmcCheck(entry, config.driver, nova="no such host",
                     problem=f"the bmc.yaml entry {entry!r} matches no compute host "
                             f"(hypervisor or nova-compute host name): correct its name")
            for entry, config in sorted(load_bmc_file(path).items()) if entry not in names]
