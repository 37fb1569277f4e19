"""[planner] capacity_model = auto (the default): ucac when usage is measured, else
Placement only, so a cloud without telemetry plans as before and one with it plans on
usage at confidence."""

from __future__ import annotations

from consolidator.app.config import Config
from consolidator.app.planning import resolved_capacity_model
from consolidator.core.model import Cluster, Host, Instance


def _cluster(usage: dict[str, float] | None) -> Cluster:
    host = Host(name="h1", vcpus=8, memory_mb=8192, disk_gb=100)
    return Cluster(hosts=(host,), instances=(Instance(name="a", host="h1", vcpus=2,
                                                      memory_mb=1024, disk_gb=10,
                                                      usage=usage),))


def test_auto_is_ucac_with_measured_usage_and_placement_without() -> None:
    assert Config().get("planner", "capacity_model") == "auto"
    assert resolved_capacity_model("auto", _cluster({"cpu_mean": 0.5, "cpu_std": 0.1})) == \
        "ucac"
    assert resolved_capacity_model("auto", _cluster(None)) == "placement"
    assert resolved_capacity_model("placement", _cluster({"cpu_mean": 0.5})) == "placement"
    assert resolved_capacity_model("ucac", _cluster(None)) == "ucac"
