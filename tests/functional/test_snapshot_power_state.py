"""A host down in Nova is recorded as its BMC reads it: a host consolidator powered off is
'off' in the snapshot, so plans, the front and budgets count only the hosts really on."""

from __future__ import annotations

import json
from pathlib import Path

from tests.functional.cli import Result, run
from tests.functional.served import ServedCloud, served_cloud

SCENARIO = {
    "settings": {"service_up_delay_s": 0.2, "bmc_graceful_delay_s": 0.1},
    "hosts": [{"name": f"c{n}", "vcpus": 16, "memory_mb": 65536, "disk_gb": 1000,
               "bmc": {"driver": "ipmi" if n % 2 else "redfish"}} for n in range(1, 6)]
    + [{"name": f"off{n}", "vcpus": 16, "memory_mb": 65536, "disk_gb": 1000,
        "power": "off", "status": "disabled", "bmc": {"driver": "ipmi" if n % 2 else "redfish"}}
       for n in (1, 2)],
    "instances": [{"name": f"vm-{h}-{k}", "host": f"c{h}", "vcpus": 2, "memory_mb": 4096,
                   "disk_gb": 10} for h in range(1, 6) for k in range(3)],
}


def consolidator(served: ServedCloud, tmp: Path, *args: str) -> Result:
    env = {"OS_CLIENT_CONFIG_FILE": str(served.clouds_yaml),
           "CONSOLIDATOR_BMC_FILE": str(served.bmc_yaml)}
    return run("--cloud", served.cloud_name, *args, db_url=f"sqlite:///{tmp / 'c.db'}",
               env=env, timeout=240)


def test_hosts_off_by_their_bmc_are_not_counted_as_on(tmp_path: Path) -> None:
    with served_cloud(SCENARIO, tmp_path) as served:
        assert consolidator(served, tmp_path, "db", "upgrade").code == 0
        snap = consolidator(served, tmp_path, "snapshot")
        assert snap.code == 0, snap.err
        shown = json.loads(consolidator(served, tmp_path, "snapshots", "show", snap.out.strip(),
                                        "--format", "json").out)
        power = {h["name"]: (h["state"], h["power"]) for h in shown["hosts"]}
        assert power["off1"] == power["off2"] == ("down", "off"), power
        made = consolidator(served, tmp_path, "plan", "--snapshot", snap.out.strip(),
                            "--format", "json")
        assert made.code == 0, made.err
        plan = json.loads(made.out)
        assert plan["hosts_before"] == 5                 # c1..c5; off1 and off2 are off
        target = consolidator(served, tmp_path, "plan", "--snapshot", snap.out.strip(),
                              "--target-hosts", "4", "--format", "json")
        assert json.loads(target.out)["hosts_after"] == 4, target.err
        report = json.loads(consolidator(served, tmp_path, "report", "--format", "json").out)
        assert report["hosts_on"][-1]["hosts_on"] == plan["hosts_before"]
