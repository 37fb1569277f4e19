"""Usage-driven power on the fake cloud, usage read through a real Prometheus: the capacity
watch powers a host on when usage at confidence nears the powered cores, with no host
overloaded and a padding of 0; the next cycle's plan keeps it on for [power] min_on_time."""

from __future__ import annotations

from pathlib import Path

import time_machine
from sqlalchemy import Engine

from consolidator.store.db import make_engine, upgrade
from consolidator.store.plans import load_plan
from tests.functional.test_daemon import NIGHT, make_daemon
from tests.functional.test_relief import RECORDED, served

#: c1 and c2 have 4 cores each and use 3.8 and 3.6 of them: neither is overloaded, but 7.4
#: is more than 90 % ([relief] headroom) of 8; c3 (8 cores) was powered off by consolidator.
#: The instances are pinned, so that the cycle's plan can only power the empty c3 off.
USAGE = {"vm-a": ("c1", 2.0, 1024), "vm-b": ("c1", 1.8, 1024), "vm-c": ("c2", 3.6, 1024)}


def scenario() -> dict:
    hosts = [{"name": name, "vcpus": cores, "memory_mb": 16384, "disk_gb": 200,
              "cpu_allocation_ratio": 4.0, "bmc": {"driver": "redfish"}}
             for name, cores in (("c1", 4), ("c2", 4), ("c3", 8))]
    hosts[2].update(power="off", status="disabled", disabled_reason="consolidator: plan x")
    instances = [{"name": name, "host": host, "vcpus": 4, "memory_mb": memory, "disk_gb": 10,
                  "usage": {"cpu_mean": mean, "cpu_std": 0.0},
                  "metadata": {"consolidator:exclude": "true"}}
                 for name, (host, mean, memory) in USAGE.items()]
    return {"hosts": hosts, "instances": instances}


def engine_at(tmp_path: Path) -> Engine:
    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}")
    upgrade(engine)
    return engine


def test_usage_near_the_powered_cores_powers_a_host_on_and_it_stays_on(tmp_path: Path) -> None:
    queries = {"cpu_mean_query": f"avg_over_time({RECORDED}[2s])",
               "cpu_std_query": f"stddev_over_time({RECORDED}[2s])"}
    with served(scenario(), tmp_path, count=len(USAGE)) as (cloud, prom):
        daemon = make_daemon(cloud, engine_at(tmp_path), tmp_path,
                             telemetry={"prometheus_url": prom.url, **queries},
                             relief=queries,
                             planner={"capacity_model": "ucac", "confidence": "0.99"})
        with time_machine.travel(NIGHT, tick=True):     # the padding is 0 at night
            assert daemon.target() == 0
            assert daemon.capacity_watch() == ["c3"]
            assert cloud.power("c3") == "on"
            cycle = daemon.cycle()
        plan = load_plan(daemon.ctx.engine(), cycle.plan_id)
        assert "c3" not in plan.draft.power_off
        assert "min_on_time" in plan.draft.left_on["c3"]
        assert cloud.power("c3") == "on"
