"""Every Placement resource class and traits: the model, scenarios, plans and the checker."""

from __future__ import annotations

from pathlib import Path

import pytest

from consolidator.core.algorithms.catalog import ALGORITHMS
from consolidator.core.checker import MoveSpec, check_plan
from consolidator.core.constraints import build_problem, is_important
from consolidator.core.errors import ModelError, ScenarioError
from consolidator.core.model import Cluster, Host, Instance
from consolidator.core.planner import plan_cluster
from consolidator.scenario.files import cluster_to_document, load_cluster, parse_scenario

DATA = Path(__file__).resolve().parents[1] / "data"


def pcpu_cluster() -> Cluster:
    return load_cluster(DATA / "pcpu-vgpu.yaml")


def test_columns_follow_the_classes_present() -> None:
    cluster = pcpu_cluster()
    assert cluster.resource_classes == ("VCPU", "MEMORY_MB", "DISK_GB", "PCPU", "VGPU")
    rows = cluster.host_index
    pcpu, vgpu = 3, 4
    assert cluster.capacity[rows["p1"], pcpu] == 16 and cluster.capacity[rows["p1"], vgpu] == 0
    assert cluster.capacity[rows["g1"], vgpu] == 4
    pin1 = cluster.instance_index[next(i.id for i in cluster.instances if i.name == "pin1")]
    assert list(cluster.demand[pin1]) == [0, 8192, 20, 8, 0]   # a pinned instance holds PCPU


def test_a_classic_cluster_keeps_three_columns() -> None:
    cluster = Cluster(hosts=(Host("a", 8, 1024, 10),),
                      instances=(Instance("x", "a", 2, 512, 5),))
    assert cluster.resource_classes == ("VCPU", "MEMORY_MB", "DISK_GB")
    assert cluster.capacity.shape == (1, 3) and cluster.demand.shape == (1, 3)


def test_scenario_round_trip_keeps_resources_and_traits() -> None:
    cluster = pcpu_cluster()
    again = parse_scenario(cluster_to_document(cluster)).cluster
    assert again == cluster
    pin1 = next(i for i in again.instances if i.name == "pin1")
    assert pin1.required_traits == ("HW_CPU_X86_AVX2",)
    assert next(h for h in again.hosts if h.name == "g1").resources["VGPU"]["max_unit"] == 2


@pytest.mark.parametrize("entry, message", [
    ({"resources": {"pcpu": 4}}, "not a resource class name"),
    ({"resources": {"VCPU": 4}}, "give it as vcpus"),
    ({"resources": {"PCPU": {"totl": 4}}}, "expected total"),
    ({"resources": {"PCPU": -1}}, "non-negative"),
])
def test_bad_host_resources_are_one_line(entry: dict, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        Host("h", 8, 1024, 10, **entry)


def test_bad_instance_traits_name_the_entry() -> None:
    doc = {"hosts": [{"name": "a", "vcpus": 4, "memory_mb": 1024, "disk_gb": 10}],
           "instances": [{"name": "x", "host": "a", "vcpus": 1, "memory_mb": 1, "disk_gb": 1,
                          "traits": {"CUSTOM_GOLD": "wanted"}}]}
    with pytest.raises(ScenarioError, match=r"instances\[0\] \(x\): traits CUSTOM_GOLD"):
        parse_scenario(doc)


@pytest.mark.parametrize("algorithm", ALGORITHMS.names())
def test_every_algorithm_plans_pcpu_and_vgpu_soundly(algorithm: str) -> None:
    """Plans over PCPU, VGPU (with max_unit) and a required trait pass the checker (the
    planner runs it) and free hosts."""
    draft = plan_cluster(pcpu_cluster(), algorithm)
    assert draft.power_off
    by_name = {i.name: i for i in pcpu_cluster().instances}
    for move in draft.migrations:
        if move.instance_name == "pin1":
            assert move.destination in {"p1", "p2"}      # the AVX2 hosts
        if by_name[move.instance_name].amount("VGPU"):
            assert move.destination.startswith("g")


def test_traits_and_units_become_capacity_columns() -> None:
    problem = build_problem(pcpu_cluster())
    cluster = problem.cluster
    assert problem.capacity.shape[1] == len(cluster.resource_classes) + 1   # one trait
    trait_column = problem.capacity[:, -1]
    rows = cluster.host_index
    assert trait_column[rows["p3"]] == 0 and trait_column[rows["p1"]] > len(cluster.instances)
    small = Cluster(hosts=(Host("g", 8, 4096, 10, resources={"VGPU": {"total": 8,
                                                                      "max_unit": 1}}),
                           Host("h", 8, 4096, 10, resources={"VGPU": 8})),
                    instances=(Instance("x", "h", 1, 512, 1, resources={"VGPU": 2}),))
    refused = build_problem(small)
    assert refused.capacity.shape[1] == 5 and list(refused.capacity[:, -1]) == [0.0, 2.0]
    assert refused.demand[0, -1] == 1.0


def test_checker_refuses_a_host_without_the_required_trait() -> None:
    cluster = pcpu_cluster()
    pin1 = next(i for i in cluster.instances if i.name == "pin1")
    problems = check_plan(cluster, [MoveSpec(pin1.id, "p1", "p3", 1)], ["p1"])
    assert any("lacks the required trait HW_CPU_X86_AVX2" in p for p in problems)
    forbidding = Instance("f", "p3", 1, 512, 1, flavor_extra_specs={
        "trait:HW_CPU_X86_AVX2": "forbidden"})
    with_forbidding = Cluster(hosts=cluster.hosts, instances=(forbidding,))
    problems = check_plan(with_forbidding, [MoveSpec(forbidding.id, "p3", "p2", 1)], [])
    assert any("has the forbidden trait" in p for p in problems)


def test_checker_refuses_an_allocation_over_max_unit() -> None:
    cluster = Cluster(hosts=(Host("g", 8, 4096, 10, resources={"VGPU": {"total": 8,
                                                                      "max_unit": 1}}),
                             Host("h", 8, 4096, 10, resources={"VGPU": 8})),
                      instances=(Instance("x", "h", 1, 512, 1, resources={"VGPU": 2}),))
    problems = check_plan(cluster, [MoveSpec(cluster.instances[0].id, "h", "g", 1)], ["h"])
    assert any("VGPU 2 is outside 1..1" in p for p in problems)


def test_checker_refuses_pcpu_over_capacity() -> None:
    cluster = pcpu_cluster()
    pin3 = next(i for i in cluster.instances if i.name == "pin3")
    pin2 = next(i for i in cluster.instances if i.name == "pin2")
    # p1 holds 8 PCPU of 16: pin3 (6) fits, then pin2 (8) does not.
    moves = [MoveSpec(pin3.id, "p3", "p1", 1), MoveSpec(pin2.id, "p2", "p1", 2)]
    assert any("p1 is over capacity" in p for p in check_plan(cluster, moves, []))


def test_dedicated_cpus_make_an_instance_important() -> None:
    from consolidator.core.constraints import Rules

    rules = Rules()
    pinned = Instance("p", "a", 2, 512, 1, flavor_extra_specs={"hw:cpu_policy": "dedicated"})
    assert is_important(pinned, rules)
    told = Instance("q", "a", 2, 512, 1, resources={"PCPU": 2, "VCPU": 0},
                    metadata={"consolidator:important": "false"})
    assert not is_important(told, rules)
