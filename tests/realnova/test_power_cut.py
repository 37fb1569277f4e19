"""Reading the cloud right after a host loses power, before Nova reports it down.

From 2.88, Nova's GET /os-hypervisors/detail asks every nova-compute for its uptime over
RPC; a powered-off one that is not yet reported down makes the whole list fail with 500
after the RPC timeout (10 s here), however often it is retried. The snapshot must still
work, and show what Nova shows then: the host still up.
"""

from __future__ import annotations

from pathlib import Path

from tests.realnova.operator import operator_for
from tests.realnova.served import NovaView, served_nova


def scenario() -> dict:
    """Two hosts with one server each."""
    hosts = [{"name": f"p{n}", "vcpus": 8, "memory_mb": 16384, "disk_gb": 200,
              "bmc": {"driver": "redfish"}} for n in (1, 2)]
    instances = [{"name": f"vm{n}", "host": f"p{n}", "vcpus": 1, "memory_mb": 1024,
                  "disk_gb": 10} for n in (1, 2)]
    return {"hosts": hosts, "instances": instances}


def test_snapshot_just_after_a_power_cut(tmp_path: Path) -> None:
    # Nova notices the cut only after 120 s without a heartbeat.
    with served_nova(scenario(), tmp_path, service_down_time=120) as served:
        op, nova = operator_for(served, tmp_path), NovaView(served)
        served._call("POST", "/power/p2", {"on": False})
        assert nova.power()["p2"] == "off"
        assert nova.services()["p2"].state == "up"
        snap = op("snapshot")
        assert snap.code == 0, snap.err
        hosts = {h.name: h for h in nova.conn.compute.hypervisors()}
        assert set(hosts) == {"p1", "p2"}
