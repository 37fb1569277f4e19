"""Placement reads: provider trees with every resource class, traits and allocations, the
free room of a provider, and allocation candidates (the pre-flight of a move).

A compute host is the tree under its compute-node provider (whose name is the hypervisor
hostname); nested providers, such as a vGPU's physical GPU, count toward their root.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from consolidator.openstack.connection import cloud_errors, get_json, has_endpoint

if TYPE_CHECKING:
    from openstack.connection import Connection

#: Provider trees (root_provider_uuid) need 1.14; forbidden traits 1.22; in_tree 1.31.
PLACEMENT_MICROVERSION = "1.31"


@dataclass
class ProviderTree:
    """One compute host in Placement: its root provider and what its whole tree holds."""

    uuid: str
    name: str
    #: class -> {total, reserved, allocation_ratio, min_unit, max_unit, step_size}, summed
    #: over the tree where a class sits in several providers.
    inventories: dict[str, dict[str, float]] = field(default_factory=dict)
    usages: dict[str, float] = field(default_factory=dict)
    traits: set[str] = field(default_factory=set)
    #: consumer uuid -> class -> amount, over the tree.
    allocations: dict[str, dict[str, float]] = field(default_factory=dict)
    members: list[str] = field(default_factory=list)


def read_trees(conn: Connection, names: Iterable[str], workers: int
               ) -> dict[str, ProviderTree]:
    """The provider tree of each named compute node (hypervisor hostname)."""
    wanted = set(names)
    providers = get_json(conn.placement, "/resource_providers",
                         microversion=PLACEMENT_MICROVERSION).get("resource_providers", [])
    trees: dict[str, ProviderTree] = {}
    by_root: dict[str, ProviderTree] = {}
    for rp in providers:
        if rp.get("name") in wanted and rp.get("root_provider_uuid", rp["uuid"]) == rp["uuid"]:
            tree = ProviderTree(uuid=rp["uuid"], name=rp["name"])
            trees[rp["name"]] = by_root[rp["uuid"]] = tree
    for rp in providers:
        root = by_root.get(rp.get("root_provider_uuid") or rp["uuid"])
        if root is not None:
            root.members.append(rp["uuid"])

    def fetch(uuid: str) -> tuple[str, dict[str, Any]]:
        base = f"/resource_providers/{uuid}"
        return uuid, {what: get_json(conn.placement, f"{base}/{what}",
                                     microversion=PLACEMENT_MICROVERSION)
                      for what in ("inventories", "usages", "traits", "allocations")}

    members = {uuid: tree for tree in trees.values() for uuid in tree.members}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for uuid, body in pool.map(fetch, members):
            _merge(members[uuid], body)
    return trees


def _merge(tree: ProviderTree, body: Mapping[str, Any]) -> None:
    """Add one provider's inventories, usages, traits and allocations to its tree."""
    for rc, inv in (body["inventories"].get("inventories") or {}).items():
        row = {k: float(inv.get(k, d)) for k, d in (
            ("total", 0), ("reserved", 0), ("allocation_ratio", 1.0), ("min_unit", 1),
            ("max_unit", inv.get("total", 0)), ("step_size", 1))}
        if rc in tree.inventories:
            have = tree.inventories[rc]
            have["total"] += row["total"]
            have["reserved"] += row["reserved"]
            have["max_unit"] = max(have["max_unit"], row["max_unit"])
        else:
            tree.inventories[rc] = row
    for rc, used in (body["usages"].get("usages") or {}).items():
        tree.usages[rc] = tree.usages.get(rc, 0.0) + float(used)
    tree.traits.update(body["traits"].get("traits") or [])
    for consumer, alloc in (body["allocations"].get("allocations") or {}).items():
        held = tree.allocations.setdefault(consumer, {})
        for rc, amount in (alloc.get("resources") or {}).items():
            held[rc] = held.get(rc, 0.0) + float(amount)


def room(conn: Connection, provider: str) -> dict[str, float]:
    """Free capacity of a compute node's provider tree per class: (total - reserved) x ratio
    minus what is used."""
    tree = _tree_usage(conn, provider)
    return {rc: (inv["total"] - inv["reserved"]) * inv["allocation_ratio"]
            - tree.usages.get(rc, 0.0) for rc, inv in tree.inventories.items()}


def usage(conn: Connection, provider: str) -> dict[str, float]:
    """What is allocated on a compute node's provider tree, per class (non-zero ones); {} for
    a cloud without Placement."""
    with cloud_errors(conn, "checking the catalog for placement"):
        if not has_endpoint(conn, "placement"):
            return {}
    return {rc: n for rc, n in _tree_usage(conn, provider).usages.items() if n}


def _tree_usage(conn: Connection, provider: str) -> ProviderTree:
    """The inventories and usages of a provider and its nested providers."""
    tree = ProviderTree(uuid=provider, name=provider, members=[provider])
    with cloud_errors(conn, f"reading Placement for {provider}"):
        children = get_json(conn.placement, f"/resource_providers?in_tree={provider}",
                            microversion=PLACEMENT_MICROVERSION).get("resource_providers")
        for uuid in [provider] + [c["uuid"] for c in children or [] if c["uuid"] != provider]:
            base = f"/resource_providers/{uuid}"
            _merge(tree, {what: get_json(conn.placement, f"{base}/{what}",
                                         microversion=PLACEMENT_MICROVERSION)
                          if what in ("inventories", "usages") else {}
                          for what in ("inventories", "usages", "traits", "allocations")})
    return tree


def candidates(conn: Connection, provider: str, resources: Mapping[str, float],
               required: Iterable[str] = (), forbidden: Iterable[str] = ()) -> bool:
    """Whether Placement offers the tree of `provider` as an allocation candidate for the
    summed `resources` with the traits: one GET /allocation_candidates with in_tree."""
    amounts = ",".join(f"{rc}:{int(round(n))}" for rc, n in sorted(resources.items()) if n > 0)
    if not amounts:
        return True
    query = {"resources": amounts, "in_tree": provider, "limit": 1}
    traits = sorted(set(required)) + [f"!{t}" for t in sorted(set(forbidden))]
    if traits:
        query["required"] = ",".join(traits)
    with cloud_errors(conn, f"asking Placement for allocation candidates on {provider}"):
        body = get_json(conn.placement, f"/allocation_candidates?{urlencode(query)}",
                        microversion=PLACEMENT_MICROVERSION)
    return bool(body.get("allocation_requests"))


@dataclass(frozen=True)
class Demand:
    """What one instance asks of a destination: its allocations and its flavor's traits."""

    name: str
    resources: Mapping[str, float]
    required: tuple[str, ...] = ()
    forbidden: tuple[str, ...] = ()


def refusals(conn: Connection, provider: str, arriving: Iterable[Demand]) -> dict[str, str]:
    """Which of the instances arriving together on `provider` Placement would refuse, and why
    (see admit): the free room of the tree read once, then allocation candidates."""
    return admit(room(conn, provider), arriving,
                 lambda resources, required, forbidden:
                 candidates(conn, provider, resources, required, forbidden))


#: Whether a provider tree is offered for (resources, required traits, forbidden traits).
Offers = Callable[[Mapping[str, float], Iterable[str], Iterable[str]], bool]


def admit(free: Mapping[str, float], arriving: Iterable[Demand], offers: Offers
          ) -> dict[str, str]:
    """Which arrivals a provider with `free` room refuses, and why.

    The arrivals are admitted in order while every class fits; then one offer for the summed
    demand and the union of the traits checks units and traits. Only when it is refused is
    each admitted instance asked about alone, to name the ones refused.
    """
    used: dict[str, float] = {}
    admitted: list[Demand] = []
    refused: dict[str, str] = {}
    for demand in arriving:
        short = next((rc for rc, n in demand.resources.items()
                      if n > 0 and used.get(rc, 0.0) + n > free.get(rc, 0.0) + 1e-6), None)
        if short is not None:
            refused[demand.name] = (f"Placement has no room left for its {short} "
                                    f"({free.get(short, 0.0) - used.get(short, 0.0):g} free)")
            continue
        admitted.append(demand)
        for rc, n in demand.resources.items():
            used[rc] = used.get(rc, 0.0) + n
    required = {t for d in admitted for t in d.required}
    forbidden = {t for d in admitted for t in d.forbidden}
    if admitted and not offers(used, required, forbidden):
        for demand in admitted:
            if not offers(demand.resources, demand.required, demand.forbidden):
                refused[demand.name] = ("Placement offers no allocation candidate for it "
                                        "(its resources, inventory units or traits)")
    return refused
