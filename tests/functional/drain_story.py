"""The drain story, told the same way to the fake cloud and to the real Nova: a drain blocked
by a pinned instance moves nothing and names it; a drain with --power-off empties its host,
moves nothing else, leaves it disabled with the drain's reason, journaled; undrain brings it
back; a drain without --power-off leaves the host on and disabled."""

from __future__ import annotations

import json
from typing import Any, Protocol

from tests.functional.cli import Result
from tests.functional.served import ServedCloud
from tests.realnova.served import NovaView


class Runs(Protocol):
    """An operator: runs consolidator commands against the served cloud."""

    served: ServedCloud

    def __call__(self, *args: str) -> Result: ...


def scenario() -> dict[str, Any]:
    """c1 holds a0-a2, c2 holds b0, c3 holds d0 (pinned by metadata); c4 is empty."""
    hosts = [{"name": f"c{n}", "vcpus": 8, "memory_mb": 16384, "disk_gb": 200,
              "cpu_allocation_ratio": 2.0, "bmc": {"driver": "redfish"}} for n in range(1, 5)]
    where = {"a0": "c1", "a1": "c1", "a2": "c1", "b0": "c2", "d0": "c3"}
    instances = [{"name": name, "host": host, "vcpus": 1, "memory_mb": 1024, "disk_gb": 10}
                 for name, host in where.items()]
    instances[-1]["metadata"] = {"consolidator:exclude": "true"}
    return {"hosts": hosts, "instances": instances}


def _ok(result: Result, what: str) -> Result:
    assert result.code == 0, f"{what}: {result.out}{result.err}"
    return result


def journal_of(op: Runs, plan_id: str) -> list[tuple[str, str, str]]:
    """(action, target, state) of a plan's journal rows, oldest first."""
    rows = json.loads(_ok(op("journal", "--plan", plan_id, "--format", "json"), "journal").out)
    return [(r["action"], r["params"].get("instance", r["target"]), r["state"])
            for r in sorted(rows, key=lambda r: r["id"])]


def tell(op: Runs) -> None:
    """The whole story; every assertion is on Nova's own view or the journal."""
    nova = NovaView(op.served)
    before = nova.where()

    blocked = op("hosts", "drain", "c3", "--yes")
    assert blocked.code == 1, blocked.out + blocked.err
    assert "the drain is blocked, nothing moves" in blocked.err
    assert "d0: consolidator:exclude=true" in blocked.err
    assert "Traceback" not in blocked.err
    assert nova.where() == before and nova.services()["c3"].status == "enabled"

    plan = json.loads(_ok(op("hosts", "drain", "c1", "--power-off", "--format", "json"),
                          "drain c1").out)
    assert plan["status"] == "proposed" and plan["drain"] == ["c1"]
    assert sorted(m["instance_name"] for m in plan["migrations"]) == ["a0", "a1", "a2"]
    assert nova.where() == before                       # stored for review, nothing ran
    dry = _ok(op("apply", plan["id"], "--dry-run"), "dry-run the drain")
    assert "would succeed" in dry.out + dry.err
    assert nova.where() == before and nova.services()["c1"].status == "enabled"
    _ok(op("apply", plan["id"], "--yes"), "apply the drain")
    after = nova.where()
    assert "c1" not in {after[n] for n in ("a0", "a1", "a2")}
    assert {n: h for n, h in after.items() if n in ("b0", "d0")} == \
        {"b0": before["b0"], "d0": before["d0"]}        # nothing else moved
    service = nova.services()["c1"]
    assert service.status == "disabled"
    assert service.disabled_reason.startswith(f"consolidator: drained by plan {plan['id']}")
    assert nova.power()["c1"] == "off"
    rows = journal_of(op, plan["id"])
    # 'apply --yes' of the proposed drain plan is journaled first, as applied unapproved
    assert rows[0] == ("approve", plan["id"], "succeeded")
    rows = rows[1:]
    assert rows[0] == ("disable", "c1", "succeeded")    # before the first migration
    assert sorted(r[1] for r in rows if r[0] == "migrate") == ["a0", "a1", "a2"]
    assert all(r[2] == "succeeded" for r in rows if r[0] == "migrate")
    assert ("power_off", "c1", "succeeded") in rows
    assert _states(op)["c1"] == "off"                  # 'hosts list' shows the recorded state

    _ok(op("hosts", "undrain", "c1"), "undrain c1")
    nova.wait(lambda: nova.services()["c1"].state == "up", "c1 up")
    service = nova.services()["c1"]
    assert (service.status, nova.power()["c1"]) == ("enabled", "on")
    rows = journal_of(op, plan["id"])
    assert ("power_on", "c1", "succeeded") in rows and rows[-1] == ("enable", "c1", "succeeded")

    kept_on = _ok(op("hosts", "drain", "c2", "--yes"), "drain c2")
    assert "succeeded" in kept_on.out
    assert nova.where()["b0"] != "c2" and nova.power()["c2"] == "on"
    assert nova.services()["c2"].disabled_reason.startswith("consolidator: drained by plan")
    states = _states(op)
    assert (states["c1"], states["c2"]) == ("in service", "drained")
    refused = op("hosts", "undrain", "c4")
    assert refused.code == 2 and "c4 is not drained" in refused.err
    _ok(op("hosts", "undrain", "c2"), "undrain c2")
    assert nova.services()["c2"].status == "enabled"


def _states(op: Any) -> dict[str, str | None]:
    """host -> the state consolidator recorded, as 'hosts list' shows it."""
    listed = _ok(op("hosts", "list", "-f", "json"), "hosts list")
    return {r["host"]: r["state"] for r in json.loads(listed.out)}
