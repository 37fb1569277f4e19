"""zoned-bestfit's [zones]: host globs, then aggregates, then default, then the paper's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from consolidator.app.config import load_config
from consolidator.core.errors import ConfigError
from consolidator.core.model import Cluster, Host
from consolidator.core.zones import ZoneRules, parse_zone_spec, zones_for_cluster

PAPER = parse_zone_spec("24x2.0,35x8.0")


def host(name: str, *aggregates: str) -> Host:
    """A 64-core host in the given aggregates."""
    return Host(name=name, vcpus=64, memory_mb=1024, disk_gb=10, aggregates=aggregates)


SECTION = {
    "default": "10x1,10x1",
    "aggregate:gpu": "1x1,1x1",
    "aggregate:fast": "2x1,2x1",
    "big-*": "3x1,3x1",
}


@pytest.mark.parametrize("name, aggregates, expected", [
    ("big-1", ("gpu",), "3x1,3x1"),          # a matching glob beats an aggregate
    ("node-1", ("gpu",), "1x1,1x1"),
    ("node-2", ("fast", "gpu"), "1x1,1x1"),  # the first aggregate key in config order wins
    ("node-3", ("fast",), "2x1,2x1"),
    ("node-4", ("other",), "10x1,10x1"),     # in no configured aggregate: default
    ("node-5", (), "10x1,10x1"),
])
def test_precedence(name: str, aggregates: tuple[str, ...], expected: str) -> None:
    assert ZoneRules(SECTION).spec_for(host(name, *aggregates)) == parse_zone_spec(expected)


def test_without_a_rule_the_clouds_own_zones_apply() -> None:
    """No rule names the host: its zones are its PCPU and VCPU inventories (no split);
    the paper's split is a preset that must be asked for."""
    rules = ZoneRules({"aggregate:gpu": "1x1,1x1"})
    assert rules.spec_for(host("n", "fast")) is None
    assert ZoneRules({}).spec_for(host("n")) is None
    assert zones_for_cluster(Cluster(hosts=(host("n"),)), {}) is None
    rows = zones_for_cluster(Cluster(hosts=(host("a", "gpu"), host("b"))), {"aggregate:gpu":
                                                                           "1x1,1x1"})
    assert rows is not None and np.isnan(rows[1]).all() and not np.isnan(rows[0]).any()
    assert ZoneRules({"default": "paper"}).spec_for(host("n")) == PAPER
    assert parse_zone_spec("Paper") == PAPER


def test_aggregate_names_are_case_sensitive() -> None:
    rules = ZoneRules({"aggregate:GPU": "1x1,1x1", "Default": "2x1,2x1"})
    assert rules.spec_for(host("n", "GPU")) == parse_zone_spec("1x1,1x1")
    assert rules.spec_for(host("n", "gpu")) == parse_zone_spec("2x1,2x1")


def test_zones_for_cluster_rows_follow_hosts() -> None:
    cluster = Cluster(hosts=(host("a", "gpu"), host("big-b", "gpu"), host("c")))
    rows = zones_for_cluster(cluster, SECTION)
    assert rows.shape == (3, 4)
    np.testing.assert_array_equal(rows, [[1, 1, 1, 1], [3, 1, 3, 1], [10, 1, 10, 1]])


def test_config_keeps_aggregate_keys_in_order_and_case(tmp_path: Path) -> None:
    path = tmp_path / "c.conf"
    path.write_text("[zones]\naggregate:GPU-Hosts = 1x1,1x1\naggregate:fast = 2x1,2x1\n"
                    "default = 10x1,10x1\n[planner]\nSpare = 3\n")
    config = load_config(path)
    assert list(config.section("zones")) == ["aggregate:GPU-Hosts", "aggregate:fast", "default"]
    assert config.get("planner", "spare") == 3
    rules = ZoneRules(config.section("zones"))
    assert rules.spec_for(host("n", "fast", "GPU-Hosts")) == parse_zone_spec("1x1,1x1")


@pytest.mark.parametrize("text, message", [
    ("[zones]\naggregate:gpu = 24x2\n", r"\[zones\] aggregate:gpu = '24x2': expected"),
    ("[zones]\naggregate: = 1x1,1x1\n", "expected 'aggregate:NAME'"),
])
def test_bad_zone_keys_are_one_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "c.conf"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as info:
        load_config(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)
