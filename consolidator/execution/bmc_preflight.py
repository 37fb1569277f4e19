"""The BMC pre-flight of a plan: before its first migration, log in to the BMC of every host
the plan will power off, and check that each entry reaches that host's own system. A host
whose BMC fails is not emptied (its moves are skipped), so that a BMC that refuses its login
never leaves an emptied host disabled and on.

An entry reaches the right system when the identity bmc.yaml gives for it (system_uuid,
system_serial, system_hostname for Redfish; system_guid for IPMI) is the one the BMC reports.
Where the entry gives none, the system it reaches must not be one another host's entry reaches
too (the same UUID or GUID, or a HostName naming another host): a mis-wired system_id, address
or port would otherwise power off another, busy host.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from consolidator.core.errors import ConsolidatorError
from consolidator.core.model import Host
from consolidator.power.driver import identity_mismatch

if TYPE_CHECKING:
    from consolidator.power.driver import PowerDriver

PowerLookup = Callable[[str], "PowerDriver | None"]
#: BMCs read at once while looking for an entry that reaches another host's system.
PARALLEL_READS = 8
#: The identity keys that name one system (a serial may repeat across vendors).
UNIQUE_KEYS = ("uuid", "guid")


def read_identity(driver: PowerDriver) -> tuple[str, dict[str, str]]:
    """Log in and read: the power state and the identity the BMC reports (PowerError)."""
    return driver.power_state(), driver.identity()


def _identities(lookup: PowerLookup, hosts: Iterable[Host]) -> dict[str, dict[str, str]]:
    """The identity every other configured BMC reports (those that fail are left out)."""
    def one(host: Host) -> tuple[str, dict[str, str] | None]:
        driver = lookup(host.name)
        if driver is None:
            return host.name, None
        try:
            return host.name, driver.identity()
        except ConsolidatorError:
            return host.name, None

    with ThreadPoolExecutor(max_workers=PARALLEL_READS) as pool:
        return {name: ident for name, ident in pool.map(one, hosts) if ident}


def shared_system(host: Host, ident: dict[str, str], others: dict[str, dict[str, str]],
                  hosts: Iterable[Host]) -> str | None:
    """Why the system a host's entry reaches looks like another host's, or None."""
    for other, theirs in sorted(others.items()):
        if other == host.name:
            continue
        for key in UNIQUE_KEYS:
            if ident.get(key) and ident.get(key, "").lower() == theirs.get(key, "").lower():
                return (f"its BMC entry reaches the same system as {other}'s ({key} "
                        f"{ident[key]}): a mis-wired entry")
    name = (ident.get("hostname") or "").lower()
    for peer in hosts:
        if peer.name != host.name and name and name in (
                peer.name.lower(), peer.compute_host.lower()):
            return f"its BMC reports HostName {ident['hostname']!r}, another host's name"
    return None


def preflight(lookup: PowerLookup, targets: Iterable[Host], hosts: list[Host]
              ) -> dict[str, str]:
    """Why each target's BMC may not be trusted with its power-off (targets without a BMC
    entry are left to the power-off step, which notes them)."""
    problems: dict[str, str] = {}
    unchecked: dict[str, dict[str, str]] = {}
    for host in targets:
        driver = lookup(host.name)
        if driver is None:
            continue
        try:
            _, ident = read_identity(driver)
        except ConsolidatorError as exc:
            problems[host.name] = str(exc)
            continue
        expected = driver.expected_identity()
        if expected:
            why = identity_mismatch(expected, ident)
            if why is not None:
                problems[host.name] = why
        else:
            unchecked[host.name] = ident
    if unchecked:
        others = _identities(lookup, [h for h in hosts if h.name not in unchecked])
        others.update(unchecked)
        for name, ident in unchecked.items():
            host = next(h for h in hosts if h.name == name)
            why = shared_system(host, ident, others, hosts)
            if why is not None:
                problems[name] = why
    return problems
