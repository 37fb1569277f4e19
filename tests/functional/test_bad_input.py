"""Issue 45, item 7: a scenario's huge integer ended in 'unexpected error: OverflowError', and a
host name with U+202E and a newline, or an instance name with NUL, were accepted and stored.
Names and numbers are checked at the edge: a scenario file refuses them naming the field; what
the cloud names (which cannot be refused) is stored quoted, never with a control character."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from consolidator.core.model import Cluster, Host, Instance
from consolidator.core.names import unsafe_character
from consolidator.emulators.fake.cloud import FakeCloud
from consolidator.openstack.inventory import read_inventory
from consolidator.scenario.files import Scenario
from tests.functional.cli import run

HOST = {"name": "c1", "vcpus": 8, "memory_mb": 8192, "disk_gb": 100}
VM = {"name": "vm1", "host": "c1", "vcpus": 1, "memory_mb": 512, "disk_gb": 1}


@pytest.fixture
def db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=url).code == 0
    return url


def refused(db: str, tmp_path: Path, doc: dict, suffix: str = ".yaml") -> str:
    """The one line a plan of the scenario is refused with; nothing stored."""
    path = tmp_path / f"s{suffix}"
    path.write_text(json.dumps(doc) if suffix == ".json" else
                    yaml.safe_dump(doc, allow_unicode=True))
    made = run("plan", "--scenario", str(path), db_url=db)
    assert made.code == 1, made.out + made.err
    lines = made.err.strip().splitlines()
    assert len(lines) == 1 and "unexpected error" not in made.err, made.err
    for what in ("snapshots", "plans"):
        assert json.loads(run(what, "list", "-f", "json", db_url=db).out) == []
    assert lines[0].startswith(f"consolidator: error: {path}: ")
    return lines[0][len(f"consolidator: error: {path}: "):]


@pytest.mark.parametrize("key, value, shown", [
    ("memory_mb", 10**40, "a 133-bit integer"),
    ("vcpus", 2**31, str(2**31)),
    ("reserved_disk_gb", 2**40, str(2**40)),
])
def test_a_huge_integer_is_refused_naming_the_field_and_the_range(
        db: str, tmp_path: Path, key: str, value: int, shown: str) -> None:
    line = refused(db, tmp_path, {"hosts": [{**HOST, key: value}]})
    assert line == (f"hosts[0] (c1): key {key!r} must be an integer from 0 to 2147483647 "
                    f"(Placement's range), got {shown}")


def test_a_huge_integer_where_a_number_is_expected_is_refused(db: str,
                                                               tmp_path: Path) -> None:
    line = refused(db, tmp_path, {"hosts": [{**HOST, "cpu_allocation_ratio": 10**400}]})
    assert line == ("hosts[0] (c1): key 'cpu_allocation_ratio' must be a finite number, got "
                    "a 1329-bit integer")


def test_a_huge_integer_of_an_instance_is_refused(db: str, tmp_path: Path) -> None:
    line = refused(db, tmp_path, {"hosts": [HOST], "instances": [{**VM, "disk_gb": 10**40}]})
    assert line.startswith("instances[0] (vm1): key 'disk_gb' must be an integer from 0 to "
                           "2147483647")


def test_a_host_name_with_a_direction_override_and_a_newline_is_refused(
        db: str, tmp_path: Path) -> None:
    line = refused(db, tmp_path, {"hosts": [{**HOST, "name": "c1\u202e\nevil"}]})
    assert line == ("hosts[0] (c1\\u202e\\nevil): key 'name' holds the control character "
                    "U+202E: remove it")


def test_an_instance_name_with_nul_is_refused(db: str, tmp_path: Path) -> None:
    line = refused(db, tmp_path, {"hosts": [HOST], "instances": [{**VM, "name": "vm\x00a"}]},
                   suffix=".json")
    assert line == "instances[0] (vm\\x00a): key 'name' holds the control character U+0000: " \
                   "remove it"


def test_control_characters_in_other_fields_are_refused_naming_them(db: str,
                                                                    tmp_path: Path) -> None:
    line = refused(db, tmp_path, {"hosts": [HOST], "instances": [
        {**VM, "metadata": {"role": "web\nFORGED LINE"}}]})
    assert line == ("instances[0] (vm1): key 'metadata.role' holds the control character "
                    "U+000A: remove it")
    line = refused(db, tmp_path, {"hosts": [{**HOST, "aggregates": ["rack\x1b[31m"]}]})
    assert line == "hosts[0] (c1): key 'aggregates' holds the control character U+001B: " \
                   "remove it"


def test_names_the_cloud_gives_are_stored_quoted() -> None:
    """A cloud's names cannot be refused (a user names a server): the inventory stores them
    with each control character written as its escape, never the character itself."""
    hosts = (Host(name="c1\u202e\nx", vcpus=8, memory_mb=8192, disk_gb=100,
                  aggregates=("rack\x1b",)),
             Host(name="c2", vcpus=8, memory_mb=8192, disk_gb=100))
    instances = (Instance(name="vm\x00a", host="c1\u202e\nx", vcpus=1, memory_mb=512,
                          disk_gb=1, metadata={"role\n": "web\u202e"}),
                 Instance(name="vm-b", host="c2", vcpus=1, memory_mb=512, disk_gb=1))
    with FakeCloud(Scenario(Cluster(hosts=hosts, instances=instances), {})) as cloud:
        cluster = read_inventory(cloud.connect()).cluster
    names = {h.name for h in cluster.hosts}
    assert names == {"c1\\u202e\\nx", "c2"}
    by_name = {i.name: i for i in cluster.instances}
    assert set(by_name) == {"vm\\x00a", "vm-b"}
    assert by_name["vm\\x00a"].host == "c1\\u202e\\nx"
    assert dict(by_name["vm\\x00a"].metadata) == {"role\\n": "web\\u202e"}
    assert {h.name: h.aggregates for h in cluster.hosts}["c1\\u202e\\nx"] == ("rack\\x1b",)
    for text in [*names, *by_name, *(v for i in cluster.instances for kv in
                                     i.metadata.items() for v in kv)]:
        assert unsafe_character(text) is None, text
