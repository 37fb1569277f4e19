"""Measured energy end to end: snapshot reads the emulated BMCs (IPMI and Redfish), plans show
the measured saving and the fallback, --objective energy empties the power-hungry
generation, and report shows the measured draw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.functional.cli import Result, run
from tests.functional.served import ServedCloud, served_cloud

OLD = ["old-1", "old-2", "old-3"]
NEW = ["new-1", "new-2", "new-3"]
SCENARIO = {
    "settings": {"service_up_delay_s": 0.2, "bmc_graceful_delay_s": 0.1},
    "hosts": [{"name": n, "vcpus": 16, "memory_mb": 65536, "disk_gb": 1000,
               "idle_watts": 300, "peak_watts": 500, "bmc": {"driver": "ipmi"}} for n in OLD]
    + [{"name": n, "vcpus": 32, "memory_mb": 131072, "disk_gb": 1000,
        "idle_watts": 120, "peak_watts": 300, "bmc": {"driver": "redfish"}} for n in NEW],
    "instances": [{"name": f"{h}-vm{k}", "host": h, "vcpus": 2, "memory_mb": 8192,
                   "disk_gb": 10} for h in OLD for k in range(4)]
    + [{"name": f"{h}-vm{k}", "host": h, "vcpus": 4, "memory_mb": 16384, "disk_gb": 10}
       for h in NEW for k in range(2)],
    # old-1's BMC has no power meter: its saving falls back to [energy] idle_watts.
    "faults": [{"type": "bmc_no_power_reading", "host": "old-1"}],
}
#: Half of 16 cores allocated on an old host, a quarter of 32 on a new one.
OLD_DRAW, NEW_DRAW = 300 + 200 * 0.5, 120 + 180 * 0.25


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory):
    with served_cloud(SCENARIO, tmp_path_factory.mktemp("energy")) as cloud:
        yield cloud


def consolidator(served: ServedCloud, tmp: Path, *args: str) -> Result:
    env = {"OS_CLIENT_CONFIG_FILE": str(served.clouds_yaml),
           "CONSOLIDATOR_BMC_FILE": str(served.bmc_yaml)}
    config = tmp / "consolidator.conf"
    if not config.exists():
        config.write_text("[energy]\nidle_watts = 250\n")
    return run("--config", str(config), "--cloud", served.cloud_name, *args,
               db_url=f"sqlite:///{tmp / 'c.db'}", env=env, timeout=240)


def plan_json(served: ServedCloud, tmp: Path, *args: str) -> dict:
    result = consolidator(served, tmp, "plan", *args, "--format", "json")
    assert result.code == 0, result.err
    return json.loads(result.out)


def test_measured_energy_from_snapshot_to_plan_and_report(served: ServedCloud,
                                                          tmp_path: Path) -> None:
    assert consolidator(served, tmp_path, "db", "upgrade").code == 0
    snap = consolidator(served, tmp_path, "snapshot")
    assert snap.code == 0, snap.err
    assert "read the power draw of 5 of 6 hosts" in snap.out + snap.err
    snapshot_id = snap.out.strip()
    shown = json.loads(consolidator(served, tmp_path, "snapshots", "show", snapshot_id,
                                    "--format", "json").out)
    assert {r["host"] for r in shown["power_readings"]} == {"old-2", "old-3", *NEW}

    # The same algorithm under both objectives (-a auto plans the energy objective with
    # zoned-bestfit, and the hosts objective with whichever fast algorithm frees the most).
    # zoned-bestfit in the paper's order (fewest instances first) empties the new hosts; its
    # default order keeps the large ones, which here are the new hosts too.
    energy = plan_json(served, tmp_path, "--snapshot", snapshot_id, "--objective", "energy",
                       "-a", "zoned-bestfit", "-o", "order=paper")
    default = plan_json(served, tmp_path, "--snapshot", snapshot_id, "-a", "zoned-bestfit",
                        "-o", "order=paper")
    saved = energy["energy"]
    assert set(OLD) <= set(energy["power_off"])
    assert saved["objective"] == "energy"
    assert saved["per_host"]["old-2"] == pytest.approx(OLD_DRAW, abs=1)
    assert saved["per_host"]["old-1"] == 250.0  # no reading: [energy] idle_watts
    assert "old-1" in saved["fell_back"] and {"old-2", "old-3"} <= set(saved["measured"])
    assert saved["watts_saved"] == pytest.approx(sum(saved["per_host"].values()))
    assert saved["kwh_per_day"] == pytest.approx(saved["watts_saved"] * 24 / 1000, abs=0.01)
    assert saved["watts_saved"] > default["energy"]["watts_saved"]

    text = consolidator(served, tmp_path, "plan", "show", energy["id"])
    assert "measured: " in text.out and "no reading: old-1" in text.out

    report = consolidator(served, tmp_path, "report", "--format", "json")
    assert report.code == 0, report.err
    point = json.loads(report.out)["hosts_on"][-1]
    assert point["measured_hosts"] == 5
    assert point["measured_watts"] == pytest.approx(2 * OLD_DRAW + 3 * NEW_DRAW, abs=3)
    assert json.loads(report.out)["energy"]["kwh_measured"] is not None


def test_a_failing_bmc_leaves_its_host_out_and_the_snapshot_succeeds(
        served: ServedCloud, tmp_path: Path) -> None:
    assert consolidator(served, tmp_path, "db", "upgrade").code == 0
    served.add_fault({"type": "bmc_auth_fails", "host": "new-2"})
    try:
        snap = consolidator(served, tmp_path, "snapshot")
    finally:
        served.clear_faults()
        served.add_fault(SCENARIO["faults"][0])
    assert snap.code == 0, snap.err
    shown = json.loads(consolidator(served, tmp_path, "snapshots", "show", snap.out.strip(),
                                    "--format", "json").out)
    assert {r["host"] for r in shown["power_readings"]} == {"old-2", "old-3", "new-1",
                                                             "new-3"}
    # the snapshot says which hosts gave no reading, and what stands in for them
    line = next(x for x in snap.err.splitlines() if x.startswith("read the power draw"))
    assert "no reading from new-2, old-1" in line and "idle_watts (250 W)" in line, line
    # and 'snapshots show' lists each reading beside its host
    table = consolidator(served, tmp_path, "snapshots", "show", snap.out.strip()).out
    rows = {r.split()[0]: r for r in table.splitlines() if r.split()[:1]
            and r.split()[0] in {*OLD, *NEW}}
    for reading in shown["power_readings"]:
        assert f"{reading['watts']:.0f} W" in rows[reading["host"]], rows
    assert "W" not in rows["new-2"].split()[-1] and "W" not in rows["old-1"].split()[-1]
