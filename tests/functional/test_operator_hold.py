"""Issue 45, item 5: the operator's own power-off is a hold that no actor of consolidator's
undoes. 'hosts power off c4 --force' wrote a reason that starts with 'consolidator:', which
the daemon's ramp took as its own: 'daemon --once' with [planner] spare = 3 powered c4 back on
("fewer spare hosts"). The operator's own 'hosts power on' still brings it back."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from consolidator.core.rollback_plan import is_ours
from tests.functional.served import served_cloud
from tests.functional.test_apply_cli import Operator, operator_for

#: What 'hosts power off --force' wrote before 0.2.0: old rows and reasons keep meaning a hold.
OLD_REASON = "consolidator: powered off by an operator (hosts power off --force)"


def scenario() -> dict:
    """Four Redfish hosts; the work is on c1, so c2, c3 and c4 are empty spares."""
    hosts = [{"name": f"c{n}", "vcpus": 16, "memory_mb": 65536, "disk_gb": 1000,
              "bmc": {"driver": "redfish"}} for n in range(1, 5)]
    instances = [{"name": f"vm-{k}", "host": "c1", "vcpus": 2, "memory_mb": 1024,
                  "disk_gb": 20} for k in range(3)]
    return {"hosts": hosts, "instances": instances,
            "settings": {"migration_bandwidth_mb_s": 1e6, "service_up_delay_s": 0.2,
                         "bmc_graceful_delay_s": 0.1}}


@pytest.fixture
def op(tmp_path: Path) -> Iterator[Operator]:
    with served_cloud(scenario(), tmp_path) as served:
        yield operator_for(served, tmp_path)


def daemon_once(op: Operator, tmp_path: Path):  # noqa: ANN201 - a Result
    conf = tmp_path / "daemon.conf"
    conf.write_text(op.config.read_text() + "spare = 3\n[daemon]\nauto_apply = true\n"
                    "[padding]\n00:00-24:00 = 3\n")
    return replace(op, config=conf)("daemon", "--once")


def test_the_daemon_does_not_power_on_a_host_the_operator_powered_off(op: Operator,
                                                                      tmp_path: Path) -> None:
    off = op("hosts", "power", "off", "c4", "--force", "--yes")
    assert off.code == 0, off.err
    assert op.served.state()["hosts"]["c4"]["power"] == "off"
    cycle = daemon_once(op, tmp_path)
    assert cycle.code == 0, cycle.out + cycle.err
    host = op.served.state()["hosts"]["c4"]
    assert (host["power"], host["status"]) == ("off", "disabled"), cycle.out + cycle.err
    assert "powering on c4" not in cycle.err + cycle.out
    assert not is_ours(host["disabled_reason"])
    back = op("hosts", "power", "on", "c4")          # the operator's own word ends the hold
    assert back.code == 0, back.err
    host = op.served.state()["hosts"]["c4"]
    assert (host["power"], host["status"]) == ("on", "enabled")


def test_the_old_reason_of_an_operators_power_off_is_still_a_hold(op: Operator,
                                                                  tmp_path: Path) -> None:
    """A host powered off by the previous release (its reason starts 'consolidator:')."""
    off = op("hosts", "power", "off", "c4", "--force", "--yes")
    assert off.code == 0, off.err
    from consolidator.openstack.nova import Nova

    Nova(op.served.connect()).set_service("c4", enabled=False, reason=OLD_REASON)
    assert not is_ours(OLD_REASON) and is_ours("consolidator: emptied by plan 1 for power-off")
    cycle = daemon_once(op, tmp_path)
    assert cycle.code == 0, cycle.out + cycle.err
    host = op.served.state()["hosts"]["c4"]
    assert (host["power"], host["status"], host["disabled_reason"]) == \
        ("off", "disabled", OLD_REASON), cycle.out + cycle.err
    back = op("hosts", "power", "on", "c4")
    assert back.code == 0, back.err
    host = op.served.state()["hosts"]["c4"]
    assert (host["power"], host["status"]) == ("on", "enabled")
