"""Relief on the fake cloud: 'daemon --once' with a host whose usage, read through a real
Prometheus, exceeds its cores moves work off it and leaves no host overloaded; 'plan
--relieve' makes the same moves as a plan to review."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from consolidator.emulators.fake.cloud import FakeCloud
from consolidator.scenario.files import parse_scenario
from tests.functional.cli import run
from tests.functional.prometheus_server import PrometheusServer

RECORDED = "consolidator:instance_cpu_usage:vcpus"
#: c1 has 4 cores and uses 2.5 + 2 + 1 = 5.5 of them; vm-b (2 cores, least memory of the two
#: whose leaving alone is enough) goes. c3 was powered off by consolidator.
USAGE = {"vm-a": ("c1", 2.5, 4096), "vm-b": ("c1", 2.0, 1024), "vm-c": ("c1", 1.0, 512),
         "vm-d": ("c2", 1.0, 1024), "vm-e": ("c2", 0.5, 1024)}


def scenario(c2_cores: int = 4) -> dict:
    hosts = [{"name": "c1", "vcpus": 4, "memory_mb": 16384, "disk_gb": 200,
              "cpu_allocation_ratio": 4.0, "bmc": {"driver": "redfish"}},
             {"name": "c2", "vcpus": c2_cores, "memory_mb": 16384, "disk_gb": 200,
              "cpu_allocation_ratio": 4.0, "bmc": {"driver": "redfish"}},
             {"name": "c3", "vcpus": 8, "memory_mb": 16384, "disk_gb": 200,
              "cpu_allocation_ratio": 4.0, "bmc": {"driver": "redfish"}, "power": "off",
              "status": "disabled", "disabled_reason": "consolidator: plan earlier"}]
    instances = [{"name": name, "host": host, "vcpus": 4, "memory_mb": memory, "disk_gb": 10,
                  "usage": {"cpu_mean": mean, "cpu_std": 0.0}}
                 for name, (host, mean, memory) in USAGE.items()]
    return {"hosts": hosts, "instances": instances}


def usage_by_host(cloud: FakeCloud) -> dict[str, float]:
    """Each powered host's CPU usage (the scenario's; no deviation, so UCaC is the sum)."""
    out: dict[str, float] = {}
    for inst in cloud.cluster().instances:
        out[inst.host] = out.get(inst.host, 0.0) + USAGE[inst.name][1]
    return out


def daemon_once(cloud: FakeCloud, prom: PrometheusServer, tmp_path: Path) -> tuple[str, str]:
    config = tmp_path / "c.conf"
    config.write_text(f"""
[planner]
algorithm = firstfit
capacity_model = ucac
confidence = 0.99
n_plus_one = false
[telemetry]
prometheus_url = {prom.url}
cpu_mean_query = avg_over_time({RECORDED}[2s])
cpu_std_query = stddev_over_time({RECORDED}[2s])
[relief]
cpu_mean_query = avg_over_time({RECORDED}[2s])
cpu_std_query = stddev_over_time({RECORDED}[2s])
[daemon]
auto_apply = true
[executor]
poll_interval = 0.05
power_timeout = 30
""")
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    env = {"OS_CLIENT_CONFIG_FILE": str(cloud.write_clouds_yaml(tmp_path / "clouds.yaml")),
           "CONSOLIDATOR_BMC_FILE": str(cloud.write_bmc_yaml(tmp_path / "bmc.yaml"))}
    assert run("db", "upgrade", db_url=db_url).code == 0
    once = run("--config", str(config), "--cloud", "fake", "daemon", "--once", db_url=db_url,
               env=env, timeout=240)
    assert once.code == 0, once.out + once.err
    return once.out, once.err


@contextmanager
def served(doc: dict, tmp_path: Path, count: int = len(USAGE)
           ) -> Iterator[tuple[FakeCloud, PrometheusServer]]:
    with FakeCloud(parse_scenario(doc), bmc=True, migration_bandwidth_mb_s=1e6,
                   service_up_delay_s=0.05, bmc_graceful_delay_s=0.05) as cloud, \
            PrometheusServer(cloud, tmp_path) as prom:
        prom.wait_for(RECORDED, count)
        time.sleep(8)     # until the rates of the first seconds have left the windows
        yield cloud, prom


def assert_none_overloaded(cloud: FakeCloud) -> None:
    hosts = {h.name: h for h in cloud.cluster().hosts}
    for host, used in usage_by_host(cloud).items():
        assert used <= hosts[host].vcpus, (host, used)


def test_daemon_once_relieves_the_overloaded_host_through_prometheus(tmp_path: Path) -> None:
    with served(scenario(), tmp_path) as (cloud, prom):
        assert usage_by_host(cloud)["c1"] > 4
        out, err = daemon_once(cloud, prom, tmp_path)
        assert "relief: c1 overloaded; 1 migrated" in out, out + err
        assert cloud.server_host("vm-b") == "c2"
        assert_none_overloaded(cloud)
        assert cloud.power("c3") == "off"           # there was room: nothing powered on


def test_without_room_relief_powers_on_the_host_consolidator_powered_off(
        tmp_path: Path) -> None:
    with served(scenario(c2_cores=2), tmp_path) as (cloud, prom):   # c2: 1.5 of 2 cores
        out, err = daemon_once(cloud, prom, tmp_path)
        assert "powered on c3" in out, out + err
        assert cloud.power("c3") == "on"
        assert_none_overloaded(cloud)


def test_plan_relieve_proposes_the_same_moves_for_review(tmp_path: Path) -> None:
    path = tmp_path / "overloaded.yaml"
    path.write_text(yaml.safe_dump(scenario()))
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    config = tmp_path / "c.conf"
    config.write_text("[planner]\nconfidence = 0.99\n")
    assert run("db", "upgrade", db_url=db_url).code == 0
    made = run("--config", str(config), "plan", "--relieve", "--scenario", str(path),
               "--format", "json", db_url=db_url)
    assert made.code == 0, made.err
    plan = json.loads(made.out)
    assert plan["status"] == "proposed" and plan["algorithm"] == "relief"
    assert [(m["instance_name"], m["source"], m["destination"]) for m in plan["migrations"]] \
        == [("vm-b", "c1", "c2")]
    assert any("overloaded: c1: CPU 5.50 of 4 cores" in n for n in plan["notes"])
    refused = run("--config", str(config), "plan", "--relieve", "-a", "hvp", "--scenario",
                  str(path), db_url=db_url)
    assert refused.code == 2 and "drop --algorithm" in refused.err
    unmeasured = run("--config", str(config), "plan", "--relieve", db_url=db_url,
                     env={"OS_CLIENT_CONFIG_FILE": str(tmp_path / "none.yaml")})
    assert unmeasured.code == 2 and "relief needs measured usage" in unmeasured.err


def test_the_replay_relieves_on_its_clock_and_overloads_less(tmp_path: Path) -> None:
    """'simulate trace': the consolidator policy runs relief every [relief] interval of the
    simulated clock; without that watch (interval 0, relief only at each cycle's end) the same
    plans leave more host-time overloaded."""
    from consolidator.app.config import load_config
    from consolidator.app.context import AppContext
    from consolidator.app.replay import run_policy
    from consolidator.core.replay.datacentre import G4, G5, DataCentre
    from tests.functional.test_replay_trace import SAMPLE, _hours, load_planetlab

    trace = _hours(load_planetlab(SAMPLE), 4)
    # Placement overcommitted 16:1, so that usage binds, not the flavours
    dc = DataCentre.of([(G4, 20), (G5, 20)], cpu_allocation_ratio=16)
    results = {}
    for interval in (300, 0):
        path = tmp_path / f"{interval}.conf"
        path.write_text("[planner]\nalgorithm = firstfit\ncapacity_model = ucac\n"
                        f"confidence = 0.9\n[telemetry]\nhistory = 0\n"
                        f"[relief]\ninterval = {interval}\n")
        ctx = AppContext(_config=load_config(str(path), required=True))
        results[interval] = run_policy(trace, dc, "consolidator", ctx)
    relieved, unrelieved = results[300], results[0]
    # interval 0 turns the watch off; relief still runs at the end of each cycle, as in the
    # daemon, so the watch's reliefs come on top of those
    counts = {k: int(re.search(r"(\d+) reliefs? of overloaded hosts", r.notes[0]).group(1))
              for k, r in results.items()}
    assert counts[0] >= 1 and counts[300] > counts[0], counts
    assert relieved.slatah < unrelieved.slatah
