"""The fake cloud's host aggregates, as the real-Nova backend creates them: one 'az-NAME'
aggregate per availability zone other than nova (with availability_zone metadata), then the
scenario's named aggregates; Nova mirrors each into Placement under the same uuid."""

from __future__ import annotations

from dataclasses import dataclass

from consolidator.core.model import stable_uuid
from consolidator.emulators.fake.state import CloudState


@dataclass(frozen=True)
class Aggregate:
    """One host aggregate: Nova's id, its uuid (Placement's too), zone and members."""

    id: int
    name: str
    zone: str | None
    compute_hosts: tuple[str, ...]
    hypervisors: tuple[str, ...]

    @property
    def uuid(self) -> str:
        """The aggregate's uuid, in Nova and in Placement."""
        return stable_uuid("aggregate", self.name)


def cloud_aggregates(state: CloudState) -> list[Aggregate]:
    """Every aggregate of the cloud, zones first (call with the state locked)."""
    members: dict[str, dict[str, str]] = {}
    zones: dict[str, str] = {}
    for rec in state.hosts.values():
        zone = rec.model.availability_zone
        if zone and zone != "nova":
            zones[f"az-{zone}"] = zone
            members.setdefault(f"az-{zone}", {})[rec.compute_host] = rec.name
    for rec in state.hosts.values():
        for name in rec.model.aggregates:   # a snapshot's az-NAME is that zone's aggregate
            members.setdefault(name, {})[rec.compute_host] = rec.name
    return [Aggregate(i + 1, name, zones.get(name), tuple(hosts), tuple(hosts.values()))
            for i, (name, hosts) in enumerate(members.items())]


def aggregates_of(state: CloudState, hypervisor: str) -> list[Aggregate]:
    """The aggregates a hypervisor (by its hostname) is in."""
    return [a for a in cloud_aggregates(state) if hypervisor in a.hypervisors]
