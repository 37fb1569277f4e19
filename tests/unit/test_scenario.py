"""Scenario files: the bundled one, the round trip, and errors that name file, entry and key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from consolidator.core.errors import ScenarioError
from consolidator.scenario.files import (
    cluster_to_document,
    dump_document,
    load_cluster,
    load_scenario,
    parse_scenario,
)


def test_bundled_scenario_is_shaped_like_paper_004(bundled_scenario: Path) -> None:
    cluster = load_cluster(bundled_scenario)
    assert len(cluster.hosts) == 11
    assert 190 <= len(cluster.instances) <= 210
    unimportant = [i for i in cluster.instances
                   if i.metadata.get("consolidator:important") == "false"]
    assert len(unimportant) == 75
    assert {g.policy for g in cluster.server_groups} >= {"affinity", "anti-affinity"}
    assert {h.bmc["driver"] for h in cluster.hosts} == {"ipmi", "redfish"}


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_round_trip_is_identical(bundled_scenario: Path, tmp_path: Path, suffix: str) -> None:
    original = load_scenario(bundled_scenario)
    out = tmp_path / f"export{suffix}"
    dump_document(cluster_to_document(original.cluster, original.extras), out)
    again = load_scenario(out)
    assert again.cluster == original.cluster
    assert again.extras == original.extras
    full = tmp_path / f"full{suffix}"
    dump_document(cluster_to_document(original.cluster, full=True), full)
    assert load_cluster(full) == original.cluster


def write(tmp_path: Path, doc: object, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else yaml.safe_dump(doc))
    return path


HOST = {"name": "c1", "vcpus": 8, "memory_mb": 1024, "disk_gb": 10}
VM = {"name": "vm1", "host": "c1", "vcpus": 1, "memory_mb": 512, "disk_gb": 1}


@pytest.mark.parametrize("doc, message", [
    ("hosts: [\n  {name: c1", "invalid YAML at line"),
    ("- just\n- a list\n", "expected a mapping with a 'hosts' key"),
    ({"instances": []}, "missing key 'hosts'"),
    ({"hosts": [{"name": "c1", "vcpus": 8, "memory_mb": 1}]},
     r"hosts\[0\] \(c1\): missing key 'disk_gb'"),
    ({"hosts": [{**HOST, "vcpus": "many"}]}, r"hosts\[0\] \(c1\): key 'vcpus' must be an integer"),
    ({"hosts": [{**HOST, "vpcus": 3}]}, r"hosts\[0\] \(c1\): unknown key 'vpcus'"),
    ({"hosts": [HOST], "instances": [{**VM, "host": "c9"}]}, "host 'c9' is not a known host"),
    ({"hosts": [HOST], "instances": [VM, VM]}, r"instances\[1\] \(vm1\): duplicate instance"),
    ({"hosts": [HOST], "instances": [{**VM, "memory_mb": -1}]},
     r"instances\[0\]: instance 'vm1': memory_mb must be a non-negative"),
    ({"hosts": [HOST], "instances": [VM],
      "server_groups": [{"name": "g", "policy": "affinity", "members": ["vm7"]}]},
     r"server_groups\[0\] \(g\): key 'members': 'vm7' is not a known instance"),
    ({"hosts": HOST}, "key 'hosts' must be a list"),
    ({"hosts": [HOST], "extra": 1}, "unknown top-level key 'extra'"),
])
def test_errors_name_file_entry_and_key(tmp_path: Path, doc: object, message: str) -> None:
    path = write(tmp_path, doc)
    with pytest.raises(ScenarioError, match=message) as info:
        load_scenario(path)
    assert str(path) in str(info.value)
    assert "\n" not in str(info.value)


def test_missing_file_and_bad_json(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError, match="no such file"):
        load_scenario(tmp_path / "absent.yaml")
    bad = write(tmp_path, '{"hosts": [', "s.json")
    with pytest.raises(ScenarioError, match="invalid JSON at line 1"):
        load_scenario(bad)


def test_yaml_bare_on_off_means_power() -> None:
    scenario = parse_scenario(yaml.safe_load(
        "hosts:\n- {name: c1, vcpus: 1, memory_mb: 1, disk_gb: 1, power: off}\n"))
    assert scenario.cluster.hosts[0].power == "off"


def test_members_may_be_ids_and_defaults_fill_in() -> None:
    doc = {"hosts": [HOST], "instances": [{**VM, "id": "abc"}],
           "server_groups": [{"name": "g", "policy": "anti-affinity", "members": ["abc"]}]}
    cluster = parse_scenario(json.loads(json.dumps(doc))).cluster
    assert cluster.server_groups[0].members == ("abc",)
    assert cluster.hosts[0].cpu_allocation_ratio == 1.0
    assert cluster.instances[0].status == "ACTIVE"


def test_binary_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "binary.yaml"
    path.write_bytes(b"\xff\xfe garbage")
    with pytest.raises(ScenarioError, match="not UTF-8 text") as info:
        load_scenario(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_round_trip_keeps_aggregates(tmp_path: Path, suffix: str) -> None:
    doc = {"hosts": [{**HOST, "aggregates": ["gpu-hosts", "rack-1"]},
                     {**HOST, "name": "c2", "aggregates": []}, {**HOST, "name": "c3"}]}
    original = parse_scenario(doc).cluster
    assert [h.aggregates for h in original.hosts] == [("gpu-hosts", "rack-1"), (), ()]
    exported = cluster_to_document(original)
    assert exported["hosts"][0]["aggregates"] == ["gpu-hosts", "rack-1"]
    assert "aggregates" not in exported["hosts"][1]
    out = tmp_path / f"export{suffix}"
    dump_document(exported, out)
    assert load_cluster(out) == original
    full = tmp_path / f"full{suffix}"
    dump_document(cluster_to_document(original, full=True), full)
    assert load_cluster(full) == original


@pytest.mark.parametrize("value", ["gpu", ["gpu", 3], [""], {"gpu": 1}])
def test_aggregates_must_be_a_list_of_names(tmp_path: Path, value: object) -> None:
    path = write(tmp_path, {"hosts": [{**HOST, "aggregates": value}]})
    with pytest.raises(ScenarioError, match=r"hosts\[0\] \(c1\): key 'aggregates' must be a "
                                            r"list of names") as info:
        load_scenario(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
