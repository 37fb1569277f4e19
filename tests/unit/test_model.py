"""The cluster model: validation, Placement capacity and the NumPy views."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from consolidator.core.errors import ModelError
from consolidator.core.model import Cluster, Host, Instance, ServerGroup, stable_uuid


def host(name: str = "h1", **kw: object) -> Host:
    base = {"vcpus": 16, "memory_mb": 65536, "disk_gb": 500}
    base.update(kw)
    return Host(name=name, **base)  # type: ignore[arg-type]


def inst(name: str, on: str = "h1", vcpus: int = 2, mem: int = 4096, disk: int = 20,
         **kw: object) -> Instance:
    return Instance(name=name, host=on, vcpus=vcpus, memory_mb=mem, disk_gb=disk,
                    **kw)  # type: ignore[arg-type]


def test_capacity_is_placement_formula() -> None:
    h = host(vcpus=64, memory_mb=262144, disk_gb=2000, cpu_allocation_ratio=4.0,
             ram_allocation_ratio=1.5, reserved_vcpus=4, reserved_memory_mb=4096,
             reserved_disk_gb=100)
    assert h.capacity == ((64 - 4) * 4.0, (262144 - 4096) * 1.5, (2000 - 100) * 1.0)


def test_arrays_follow_placement() -> None:
    cluster = Cluster(hosts=(host("a"), host("b", vcpus=8)),
                      instances=(inst("x", "b"), inst("y", "b", vcpus=4), inst("z", "a")))
    assert cluster.capacity.shape == (2, 3)
    assert cluster.capacity[1, 0] == 8
    assert list(cluster.placement) == [1, 1, 0]
    np.testing.assert_array_equal(cluster.usage[:, 0], [2, 6])
    assert list(cluster.population) == [1, 2]


def test_empty_cluster_has_shaped_arrays() -> None:
    cluster = Cluster(hosts=(host(),))
    assert cluster.demand.shape == (0, 3)
    assert list(cluster.population) == [0]


@pytest.mark.parametrize("build, message", [
    (lambda: Cluster(hosts=(host(),), instances=(inst("x", "nope"),)),
     "instance 'x': host 'nope' is not a known host"),
    (lambda: inst("x", vcpus=-1), "instance 'x': vcpus must be a non-negative number"),
    (lambda: host(memory_mb=-5), "host 'h1': memory_mb must be a non-negative number"),
    (lambda: host(cpu_allocation_ratio=0), "cpu_allocation_ratio must be positive"),
    (lambda: Cluster(hosts=(host(), host())), "duplicate host 'h1'"),
    (lambda: Cluster(hosts=(host(),), instances=(inst("x", id="i"), inst("y", id="i"))),
     "duplicate instance id 'i'"),
    (lambda: Cluster(hosts=(host(),), instances=(inst("x"),),
                     server_groups=(ServerGroup("g", "affinity", ("ghost",)),)),
     "server group 'g': member 'ghost' is not a known instance"),
    (lambda: ServerGroup("g", "sometimes"), "policy must be one of"),
    (lambda: host(status="maybe"), "status must be one of enabled, disabled"),
    (lambda: host(aggregates="gpu"), "host 'h1': aggregates must be a list of names"),
    (lambda: host(aggregates=["gpu", None]), "aggregates must hold non-empty strings"),
])
def test_validation_names_the_entry(build: object, message: str) -> None:
    with pytest.raises(ModelError, match=message.replace("(", r"\(")):
        build()  # type: ignore[operator]


def test_ids_default_to_stable_uuids() -> None:
    assert inst("x").id == inst("x").id != inst("y").id
    assert host("a").compute_host == "a"


def test_aggregates_are_a_sorted_tuple_of_distinct_names() -> None:
    assert host().aggregates == ()
    h = host(aggregates=["rack-2", "gpu", "rack-2"])
    assert h.aggregates == ("gpu", "rack-2")
    assert h == host(aggregates=("gpu", "rack-2"))


@pytest.mark.parametrize("kind,name", [("instance", "vm-0001"), ("host", "compute-é"),
                                       ("server_group", "")])
def test_stable_uuid_is_uuid5_of_the_kind_and_name(kind: str, name: str) -> None:
    namespace = uuid.UUID("6f0c5a8e-3f0b-4a8e-9a57-2f1f7cbb8a10")
    assert stable_uuid(kind, name) == str(uuid.uuid5(namespace, f"{kind}:{name}"))
