"""Scope (az, aggregate, host glob), excluded aggregates and projects: a plan touches nothing
outside, and the checker refuses a plan that does."""

from __future__ import annotations

from dataclasses import replace

import pytest

from consolidator.core.algorithms.catalog import ALGORITHMS
from consolidator.core.checker import MoveSpec, check_plan
from consolidator.core.constraints import Rules
from consolidator.core.errors import UsageError
from consolidator.core.model import Host
from consolidator.core.planner import PlanSettings, plan_cluster
from consolidator.core.scope import Scope, parse_scope
from tests.unit.builders import cluster, vm


def two_zones() -> tuple:
    """Four hosts in zone a (aggregate agg-a), four in zone b; one small instance on each,
    plus a project-excluded one on a4 and b4."""
    hosts = tuple(Host(name=f"{z}{n}", vcpus=16, memory_mb=32768, disk_gb=1000,
                       availability_zone=z, aggregates=(f"agg-{z}",) + (("freepool",)
                                                                         if n == 4 else ()))
                  for z in "ab" for n in range(1, 5))
    vms = [vm(f"vm-{h.name}", h.name, 2, 2048, project_id="p-ok") for h in hosts]
    return hosts, vms


def settings(**rules: object) -> PlanSettings:
    return PlanSettings(rules=Rules(**rules), n_plus_one=False)  # type: ignore[arg-type]


@pytest.mark.parametrize("scope", [Scope("az", "a"), Scope("aggregate", "agg-a"),
                                   Scope("host", "a*")])
@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS.names()))
def test_a_scoped_plan_moves_and_powers_off_nothing_outside(scope: Scope,
                                                            algorithm: str) -> None:
    hosts, vms = two_zones()
    c = cluster(hosts, vms)
    unscoped = plan_cluster(c, algorithm, settings=settings())
    assert any(m.source.startswith("b") for m in unscoped.migrations)
    draft = plan_cluster(c, algorithm, settings=settings(scope=scope))
    touched = {m.source for m in draft.migrations} | {m.destination for m in draft.migrations}
    assert touched and all(h.startswith("a") for h in touched | set(draft.power_off))
    assert draft.power_off
    assert any("scope " + str(scope) in n and "4 hosts outside it are left as they are" in n
               for n in draft.notes)


def test_the_checker_verifies_the_scope_and_the_exclusions() -> None:
    hosts, vms = two_zones()
    c = cluster(hosts, [replace(v, project_id="p-no") if v.host == "a2" else v for v in vms])
    by_name = {i.name: i for i in c.instances}
    into_b = [MoveSpec(by_name["vm-b1"].id, "b1", "b2", 1)]
    assert check_plan(c, into_b, ["b1"]) == []
    problems = check_plan(c, into_b, ["b1"], rules=Rules(scope=Scope("az", "a")))
    assert "vm-b1: destination b2 may not receive (outside the scope az=a)" in problems
    assert "vm-b1: source b1 may not be touched (outside the scope az=a)" in problems
    empty_a4 = cluster(hosts, [v for v in vms if v.host != "a4"])
    assert check_plan(empty_a4, [], ["a4"], rules=Rules(excluded_aggregates=("freepool",))) == [
        "power-off host a4 is in the excluded aggregate freepool"]
    moved = [MoveSpec(by_name["vm-a2"].id, "a2", "a1", 1)]
    assert check_plan(c, moved, [], rules=Rules(excluded_projects=frozenset({"p-no"}))) == [
        "vm-a2 may not move: its project p-no is excluded ([planner] excluded_projects)"]


@pytest.mark.parametrize("algorithm", sorted(ALGORITHMS.names()))
def test_excluded_projects_never_move_and_excluded_aggregates_are_left_alone(
        algorithm: str) -> None:
    hosts, vms = two_zones()
    c = cluster(hosts, [replace(v, project_id="p-no") if v.host in ("a1", "b1") else v
                        for v in vms])
    draft = plan_cluster(c, algorithm, settings=settings(
        excluded_projects=frozenset({"p-no"}), excluded_aggregates=("freepool",)))
    moved = {m.instance_name for m in draft.migrations}
    assert moved and "vm-a1" not in moved and "vm-b1" not in moved
    touched = {m.source for m in draft.migrations} | {m.destination for m in draft.migrations}
    assert not touched & {"a4", "b4"} and not set(draft.power_off) & {"a4", "b4", "a1", "b1"}


def test_parse_scope() -> None:
    assert parse_scope("az=nova") == Scope("az", "nova")
    assert parse_scope(" aggregate = gpu ") == Scope("aggregate", "gpu")
    assert parse_scope("host=compute-1*") == Scope("host", "compute-1*")
    assert parse_scope("") is None and parse_scope(None) is None
    for bad in ("zone=a", "az=", "nova"):
        with pytest.raises(UsageError, match="expected az=NAME, aggregate=NAME or host=GLOB"):
            parse_scope(bad)


def test_the_config_gives_the_scope_and_the_exclusions_to_plan_and_the_daemon() -> None:
    from consolidator.app.config import config_from_sections
    from consolidator.app.settings import settings_from_config
    from consolidator.core.errors import ConfigError

    config = config_from_sections({"planner": {
        "scope": "aggregate=gpu", "excluded_aggregates": "freepool, reserved",
        "excluded_projects": "p1,p2"}})
    rules = settings_from_config(config).rules
    assert rules.scope == Scope("aggregate", "gpu")
    assert rules.excluded_aggregates == ("freepool", "reserved")
    assert rules.excluded_projects == frozenset({"p1", "p2"})
    with pytest.raises(ConfigError, match=r"\[planner\] scope 'zone=a': expected az=NAME"):
        settings_from_config(config_from_sections({"planner": {"scope": "zone=a"}}))
