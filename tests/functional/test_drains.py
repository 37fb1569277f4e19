"""Drains and scopes on the fake cloud (the same drain story runs on the real Nova in
tests/realnova/test_drains.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from tests.functional.drain_story import scenario, tell
from tests.functional.served import served_cloud
from tests.functional.test_apply_cli import operator_for
from tests.realnova.served import NovaView


def test_drain_blocked_drain_and_undrain(tmp_path: Path) -> None:
    with served_cloud(scenario(), tmp_path) as served:
        tell(operator_for(served, tmp_path))


def zoned() -> dict:
    """Zone east (c1, c2, aggregate freepool on c2) and zone west (w1, w2): one small
    instance on each host; project p-kept owns the one on c1."""
    hosts = [{"name": n, "vcpus": 8, "memory_mb": 16384, "disk_gb": 200,
              "availability_zone": z, "bmc": {"driver": "redfish"},
              "aggregates": ["freepool"] if n == "w2" else []}
             for n, z in (("c1", "east"), ("c2", "east"), ("c3", "east"), ("w1", "west"),
                          ("w2", "west"), ("w3", "west"))]
    instances = [{"name": f"vm-{h['name']}", "host": h["name"], "vcpus": 1,
                  "memory_mb": 1024, "disk_gb": 10} for h in hosts]
    instances[0]["project_id"] = "p-kept"
    return {"hosts": hosts, "instances": instances}


def test_a_scoped_plan_touches_nothing_outside_and_excluded_projects_stay(
        tmp_path: Path) -> None:
    config_extra = "excluded_projects = p-kept\nexcluded_aggregates = freepool\n"
    with served_cloud(zoned(), tmp_path) as served:
        op = operator_for(served, tmp_path)
        op.config.write_text(op.config.read_text() + config_extra)
        before = NovaView(served).where()
        plan = json.loads(op("plan", "-a", "firstfit", "--scope", "az=west",
                             "--format", "json").out)
        touched = {m["source"] for m in plan["migrations"]} | \
            {m["destination"] for m in plan["migrations"]} | set(plan["power_off"])
        assert touched and touched <= {"w1", "w3"}       # w2 is in the freepool
        assert plan["options"]["scope"] == "az=west"
        assert any("scope az=west: 3 hosts outside it are left as they are" in n
                   for n in plan["notes"])
        front = json.loads(op("plan", "--front", "--scope", "az=west", "--format",
                              "json").out)["front"]
        points = [p for found in front.values() for p in found]
        assert points and all(p["migrations"] <= 1 and p["hosts_freed"] <= 1 for p in points)
        applied = op("apply", plan["id"], "--yes")
        assert applied.code == 0, applied.out + applied.err
        after = NovaView(served).where()
        assert {n: h for n, h in after.items() if n in ("vm-c1", "vm-c2", "vm-c3", "vm-w2")} \
            == {n: before[n] for n in ("vm-c1", "vm-c2", "vm-c3", "vm-w2")}
        assert {h: s["power"] for h, s in served.state()["hosts"].items()
                if h not in ("w1", "w3")} == dict.fromkeys(("c1", "c2", "c3", "w2"), "on")
        east = json.loads(op("plan", "-a", "firstfit", "--scope", "az=east",
                             "--format", "json").out)
        assert "vm-c1" not in {m["instance_name"] for m in east["migrations"]}
        assert east["migrations"] and {m["source"] for m in east["migrations"]} <= \
            {"c2", "c3"}
        west = {n: h for n, h in NovaView(served).where().items() if n.startswith("vm-w")}
        power = {h: s["power"] for h, s in served.state()["hosts"].items()}
        daemon_conf = tmp_path / "daemon.conf"
        daemon_conf.write_text(op.config.read_text() + "scope = az=east\n"
                               "[daemon]\nauto_apply = true\n")
        cycle = replace(op, config=daemon_conf)("daemon", "--once")
        assert cycle.code == 0, cycle.out + cycle.err
        after = NovaView(served).where()
        assert {n: h for n, h in after.items() if n.startswith("vm-w")} == west
        assert after["vm-c1"] == "c1" and {after["vm-c2"], after["vm-c3"]} != {"c2", "c3"}
        assert {h: s["power"] for h, s in served.state()["hosts"].items()
                if h.startswith("w")} == {h: p for h, p in power.items() if h.startswith("w")}
        bad = op("plan", "--scope", "zone=east")
        assert bad.code == 2 and "expected az=NAME, aggregate=NAME or host=GLOB" in bad.err
        op.config.write_text(op.config.read_text() + "scope = rack=1\n")
        bad = op("plans", "list")
        assert bad.code == 1 and "[planner] scope 'rack=1'" in bad.err
        assert "Traceback" not in bad.err
