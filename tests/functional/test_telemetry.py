"""Usage statistics: Prometheus API from the fake cloud, stored with snapshots, pooled, used."""

from __future__ import annotations

import math

import pytest

from consolidator.app.config import config_from_sections
from consolidator.app.context import AppContext
from consolidator.app.snapshots import record_snapshot
from consolidator.core.constraints import UsageModel, build_problem
from consolidator.core.errors import CloudError
from consolidator.core.planner import PlanSettings, plan_cluster
from consolidator.emulators.fake.cloud import FakeCloud
from consolidator.scenario.files import parse_scenario
from consolidator.store.db import make_engine
from consolidator.store.snapshots import load_snapshot, usage_history
from consolidator.telemetry.prometheus import PrometheusSource, fetch_usage, pool, pooled_cluster


def doc() -> dict:
    hosts = [{"name": f"h{n}", "vcpus": 16, "memory_mb": 131072, "disk_gb": 1000,
              "cpu_allocation_ratio": 8.0} for n in range(3)]
    instances = [{"name": f"vm{n}", "host": f"h{n % 3}", "vcpus": 4, "memory_mb": 4096,
                  "disk_gb": 10, "usage": {"cpu_mean": 1.0 + n % 3, "cpu_std": 0.5}}
                 for n in range(9)]
    instances.append({"name": "quiet", "host": "h0", "vcpus": 2, "memory_mb": 1024,
                      "disk_gb": 10})
    return {"hosts": hosts, "instances": instances}


def test_fake_cloud_serves_prometheus_and_snapshot_stores_usage(db_url: str) -> None:
    engine = make_engine(db_url)
    with FakeCloud(parse_scenario(doc())) as cloud:
        source = PrometheusSource(url=cloud.prometheus_url)
        usage = fetch_usage(source)
        assert len(usage) == 9
        assert all(u["cpu_std"] == 0.5 for u in usage.values())
        config = config_from_sections({"telemetry": {"prometheus_url": cloud.prometheus_url}})
        recorded, _ = record_snapshot(AppContext.of(config=config, engine=engine,
                                                    connect=cloud.connect))
    snap = load_snapshot(engine, recorded.info.id)
    by_name = {i.name: i for i in snap.cluster.instances}
    assert by_name["vm4"].usage == {"cpu_mean": 2.0, "cpu_std": 0.5}
    assert by_name["quiet"].usage is None
    history = usage_history(engine, snap.info.cloud,
                            before=snap.info.taken_at.replace(year=3000), limit=5)
    assert history[by_name["vm4"].id] == [{"cpu_mean": 2.0, "cpu_std": 0.5}]


def test_unreachable_prometheus_is_one_line() -> None:
    with pytest.raises(CloudError, match="cannot query Prometheus"):
        fetch_usage(PrometheusSource(url="http://127.0.0.1:9", timeout=2))


def test_pooling_two_windows() -> None:
    # Windows N(1, 0) and N(3, 0) pool to mean 2, variance E[x^2] - 4 = (1 + 9) / 2 - 4 = 1.
    assert pool([{"cpu_mean": 1.0, "cpu_std": 0.0}, {"cpu_mean": 3.0, "cpu_std": 0.0}]) == {
        "cpu_mean": 2.0, "cpu_std": 1.0}
    assert pool([]) is None


def test_ucac_capacity_model_limits_what_a_host_takes() -> None:
    cluster = parse_scenario(doc()).cluster
    pooled = pooled_cluster(cluster, {})
    plain = plan_cluster(pooled, "firstfit")
    strict = plan_cluster(pooled, "firstfit",
                       settings=PlanSettings(usage=UsageModel(confidence=0.999)))
    assert len(strict.power_off) <= len(plain.power_off)
    problem = build_problem(pooled, usage=UsageModel(confidence=0.999))
    assert problem.cpu_limit is not None and list(problem.cpu_limit) == [16.0] * 3
    assert any("ucac" in n for n in strict.notes)
    # The quiet instance has no telemetry: the fallback is half its vCPUs, CoV 0.5.
    quiet = [i.name for i in pooled.instances].index("quiet")
    assert problem.usage_mean[quiet] == 1.0 and math.isclose(problem.usage_std[quiet], 0.5)
    assert any("1 from the flavor fallback" in n for n in strict.notes)
