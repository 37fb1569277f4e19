"""The telemetry client against a real Prometheus (Debian's ``prometheus``) scraping the fake
cloud's libvirt exporters through the shipped recording rules: instant and range queries, an
outage and stale data."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from consolidator.core.errors import CloudError
from consolidator.emulators.fake.cloud import FakeCloud
from consolidator.scenario.files import parse_scenario
from consolidator.telemetry.prometheus import PrometheusSource, fetch_usage, query_range
from tests.functional.prometheus_server import PrometheusServer
from tests.functional.waits import wait_until

RECORDED = "consolidator:instance_cpu_usage:vcpus"
USAGE = {"vm-a": 1.5, "vm-b": 0.25, "vm-c": 3.0}


def scenario() -> dict:
    hosts = [{"name": f"c{n}", "vcpus": 4, "memory_mb": 8192, "disk_gb": 100} for n in (1, 2)]
    instances = [{"name": name, "host": "c1" if name != "vm-c" else "c2", "vcpus": 4,
                  "memory_mb": 1024, "disk_gb": 10, "usage": {"cpu_mean": mean, "cpu_std": 0}}
                 for name, mean in USAGE.items()]
    return {"hosts": hosts, "instances": instances}


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[FakeCloud, PrometheusServer]]:
    workdir = tmp_path_factory.mktemp("prometheus")
    with FakeCloud(parse_scenario(scenario())) as cloud, \
            PrometheusServer(cloud, workdir) as prom:
        prom.wait_for(RECORDED, len(USAGE))
        time.sleep(8)       # until the rates of the first seconds have left the windows
        yield cloud, prom


def source(prom: PrometheusServer, **kw: Any) -> PrometheusSource:
    return PrometheusSource(url=prom.url, mean_query=f"avg_over_time({RECORDED}[2s])",
                            std_query=f"stddev_over_time({RECORDED}[2s])", timeout=5, **kw)


def by_name(cloud: FakeCloud, values: dict) -> dict:
    names = {i.id: i.name for i in cloud.cluster().instances}
    return {names[k]: v for k, v in values.items()}


def test_instant_queries_give_each_instance_its_usage_in_vcpus(bed: tuple) -> None:
    cloud, prom = bed
    usage = by_name(cloud, fetch_usage(source(prom)))
    assert set(usage) == set(USAGE)
    for name, mean in USAGE.items():
        assert usage[name]["cpu_mean"] == pytest.approx(mean, rel=0.05)
        assert usage[name]["cpu_std"] < 0.05 * max(mean, 1)


def test_a_window_short_of_samples_takes_the_mean_as_its_deviation(bed: tuple) -> None:
    cloud, prom = bed
    # The 2 s windows at a 1 s interval hold 2-3 samples: enough at min_samples 2, short at
    # 100. The count query is the deviation's, with count_over_time.
    enough = by_name(cloud, fetch_usage(source(prom, min_samples=2)))
    short = by_name(cloud, fetch_usage(source(prom, min_samples=100)))
    for name, mean in USAGE.items():
        assert enough[name]["cpu_std"] < 0.05 * max(mean, 1)
        assert short[name]["cpu_mean"] == pytest.approx(mean, rel=0.05)
        assert short[name]["cpu_std"] == short[name]["cpu_mean"]


def test_a_snapshot_through_the_config_takes_the_prior_and_says_so(bed: tuple,
                                                                    tmp_path: Path) -> None:
    """The daemon's read ([telemetry] with its default min_samples of 12) on windows of 2 s:
    every instance is short of samples, is stored with its mean as its deviation, and the
    snapshot's notes say how many and why."""
    from consolidator.app.config import config_from_sections
    from consolidator.app.context import AppContext
    from consolidator.app.snapshots import record_snapshot
    from consolidator.store.db import make_engine
    from consolidator.store.snapshots import load_snapshot
    from tests.conftest import migrated

    cloud, prom = bed
    config = config_from_sections({"telemetry": {
        "prometheus_url": prom.url, "cpu_mean_query": f"avg_over_time({RECORDED}[2s])",
        "cpu_std_query": f"stddev_over_time({RECORDED}[2s])"}})
    engine = make_engine(migrated(f"sqlite:///{tmp_path / 'c.db'}"))
    recorded, inventory = record_snapshot(AppContext.of(config=config, engine=engine,
                                                        connect=cloud.connect))
    assert any("3 instances with fewer than 12 usage samples" in note
               for note in inventory.notes), inventory.notes
    stored = {i.name: i.usage for i in load_snapshot(engine, recorded.info.id).cluster.instances}
    for name, mean in USAGE.items():
        assert stored[name]["cpu_mean"] == pytest.approx(mean, rel=0.05)
        assert stored[name]["cpu_std"] == stored[name]["cpu_mean"]


def test_a_range_query_gives_each_instance_its_usage_over_time(bed: tuple) -> None:
    cloud, prom = bed
    end = time.time()
    series = by_name(cloud, query_range(source(prom), RECORDED, end - 4, end, 1))
    assert set(series) == set(USAGE)
    for name, points in series.items():
        assert len(points) >= 2
        assert [t for t, _ in points] == sorted(t for t, _ in points)
        assert [v for _, v in points] == pytest.approx([USAGE[name]] * len(points), rel=0.05)


def test_an_instance_whose_exporter_stopped_answering_counts_as_unmeasured(bed: tuple) -> None:
    cloud, prom = bed
    fresh = ('label_replace(libvirt_domain_openstack_info, "instance_uuid", "$1", '
             '"instance_id", "(.+)")')
    import requests

    requests.post(f"{cloud.base_url}/_fake/exporter-down/c2", timeout=5)
    try:
        wait_until(lambda: len(prom.query("libvirt_domain_openstack_info")) == 2,
                   "Prometheus to see c2's exporter down", interval=0.25)
        stale = by_name(cloud, fetch_usage(source(prom)))
        assert "vm-c" in stale                      # its last values are still averaged
        current = by_name(cloud, fetch_usage(source(prom, fresh_query=fresh)))
        assert set(current) == {"vm-a", "vm-b"}
    finally:
        requests.delete(f"{cloud.base_url}/_fake/exporter-down/c2", timeout=5)


def test_an_outage_is_one_line_naming_the_server(tmp_path: Path) -> None:
    with FakeCloud(parse_scenario(scenario())) as cloud:
        prom = PrometheusServer(cloud, tmp_path).start()
        url = prom.url
        prom.stop()
    with pytest.raises(CloudError) as caught:
        fetch_usage(PrometheusSource(url=url, timeout=2))
    message = str(caught.value)
    assert message.startswith(f"telemetry {url}: cannot query Prometheus")
    assert "\n" not in message
    with pytest.raises(CloudError, match="cannot query Prometheus"):
        query_range(PrometheusSource(url=url, timeout=2), RECORDED, 0, 10, 1)


def test_the_recorded_history_is_a_trace_to_replay(bed: tuple) -> None:
    from consolidator.telemetry.history import prometheus_trace

    cloud, prom = bed
    end = time.time() - 2           # what the rules have recorded by now
    trace = prometheus_trace(source(prom), end - 6, end, step=1, mips_per_vcpu=1000)
    names = {i.id: i.name for i in cloud.cluster().instances}
    assert {names[u] for u in trace.names} == set(USAGE) and trace.steps == 7
    for row, uuid in enumerate(trace.names):
        # every instance has 4 vCPUs of 1000 MIPS and 1 GiB; utilisation is usage / 4
        assert trace.mips[row] == 4000 and trace.ram_mb[row] == 1024
        assert trace.utilisation[row, -3:] == pytest.approx([USAGE[names[uuid]] / 4] * 3,
                                                            rel=0.05)


def test_simulate_trace_replays_it_from_the_command_line(bed: tuple, tmp_path: Path) -> None:
    import json

    from tests.functional.cli import run

    _cloud, prom = bed
    hosts = tmp_path / "hosts.yaml"      # a vCPU counts 1,000 MIPS: hosts of 16 vCPUs
    hosts.write_text(json.dumps({"models": [{
        "name": "box", "count": 4, "cores": 1, "mips": 16000, "memory_mb": 65536,
        "watts": [100, 110, 120, 130, 140, 150, 160, 170, 180, 190, 200]}]}))
    end = int(time.time()) - 2
    done = run("simulate", "trace", "--prometheus", prom.url, "--start", str(end - 6),
               "--end", str(end), "--step", "1", "--hosts-file", str(hosts),
               "--policy", "lr-mmt-1.2",
               "--policy", "consolidator", "--format", "json")
    assert done.code == 0, done.err
    doc = json.loads(done.out)
    assert doc["vms"] == len(USAGE) and doc["steps"] == 7
    assert [p["policy"] for p in doc["policies"]] == ["lr-mmt-1.2", "consolidator"]
    wrong = run("simulate", "trace", "--prometheus", prom.url, "--start", "yesterday",
                "--end", str(end))
    assert wrong.code == 2 and "not a time" in wrong.err and "Traceback" not in wrong.err
    alone = run("simulate", "trace", "--start", str(end - 6))
    assert alone.code == 2 and "--start and --end go with --prometheus" in alone.err
