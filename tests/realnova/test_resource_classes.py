"""PCPU, VGPU and traits on the real Nova and Placement (issue 13).

The harness gives each host the inventories a real driver reports: dedicated CPUs as PCPU on
the compute node's provider, vGPUs as VGPU on a nested child provider, traits on the root;
pinned instances boot from flavors with hw:cpu_policy=dedicated, vGPU ones with
resources:VGPU=N. Nova's default scheduler filters apply (NUMATopologyFilter is not among
them, so Placement alone decides where dedicated CPUs fit, as on a cloud without it).

One cloud serves every test of this module, in order: the snapshot, a forced plan that
Placement refuses (nothing moves), then a real plan applied.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from consolidator.core.plan import Move, PlanDraft
from consolidator.store import journal
from consolidator.store.db import make_engine
from consolidator.store.plans import save_plan, set_status
from tests.realnova.operator import Baseline, Operator, baseline, operator_for, restored
from tests.realnova.served import NovaView, served_nova

Cloud = tuple[Operator, NovaView]
PINNED = {"PCPU": 16}
GPUS = {"VGPU": {"total": 4, "max_unit": 2}}


def scenario() -> dict[str, Any]:
    """p1, p2 and p3 with 16 dedicated CPUs (p3 without AVX2, and nearly full), g1 and g2
    with four vGPUs each; pin1 needs AVX2."""
    def host(name: str, resources: dict, traits: list[str], driver: str) -> dict[str, Any]:
        return {"name": name, "vcpus": 16, "memory_mb": 65536, "disk_gb": 500,
                "cpu_allocation_ratio": 4.0, "resources": resources, "traits": traits,
                "bmc": {"driver": driver}}

    def pinned(name: str, host: str, cpus: int, **extra: Any) -> dict[str, Any]:
        return {"name": name, "host": host, "vcpus": cpus, "memory_mb": 8192, "disk_gb": 20,
                "resources": {"PCPU": cpus, "VCPU": 0}, **extra}

    return {
        "hosts": [host("p1", PINNED, ["HW_CPU_X86_AVX2"], "redfish"),
                  host("p2", PINNED, ["HW_CPU_X86_AVX2"], "ipmi"),
                  host("p3", PINNED, [], "redfish"),
                  host("g1", GPUS, [], "ipmi"), host("g2", GPUS, [], "redfish")],
        "instances": [
            pinned("pin1", "p1", 8, traits={"HW_CPU_X86_AVX2": "required"}),
            pinned("pin2", "p2", 8),
            pinned("pin3", "p3", 12),
            {"name": "gpu1", "host": "g1", "vcpus": 4, "memory_mb": 8192, "disk_gb": 20,
             "resources": {"VGPU": 2}},
            {"name": "gpu2", "host": "g2", "vcpus": 4, "memory_mb": 8192, "disk_gb": 20,
             "resources": {"VGPU": 2}}]}


@pytest.fixture(scope="module")
def served_classes(tmp_path_factory: pytest.TempPathFactory
                   ) -> Iterator[tuple[Operator, NovaView, Baseline]]:
    """One cloud for the module."""
    tmp = tmp_path_factory.mktemp("realnova-classes")
    with served_nova(scenario(), tmp) as served:
        op, nova = operator_for(served, tmp), NovaView(served)
        yield op, nova, baseline(op, nova)


@pytest.fixture
def cloud(served_classes: tuple[Operator, NovaView, Baseline]) -> Iterator[Cloud]:
    """The module's cloud, put back as it was after each test: any order works."""
    op, nova, start = served_classes
    with restored(op, nova, start):
        yield op, nova


def placement_view(nova: NovaView) -> dict[str, dict[str, Any]]:
    """root provider name -> its tree's inventories (class -> dict) and root traits."""
    conn = nova.conn
    providers = list(conn.placement.resource_providers())
    names = {rp.id: rp.name for rp in providers}
    out: dict[str, dict[str, Any]] = {}
    for rp in providers:
        root = names[rp.root_provider_id]
        inv = conn.placement.get(f"/resource_providers/{rp.id}/inventories").json()
        entry = out.setdefault(root, {"inventories": {}, "traits": set()})
        entry["inventories"].update(inv["inventories"])
        if rp.id == rp.root_provider_id:
            traits = conn.placement.get(f"/resource_providers/{rp.id}/traits",
                                        microversion="1.6").json()["traits"]
            entry["traits"] = set(traits)
    return out


def allocations(nova: NovaView, server_id: str) -> dict[str, dict[str, int]]:
    """provider name -> what the server holds there, as Placement has it."""
    conn = nova.conn
    names = {rp.id: rp.name for rp in conn.placement.resource_providers()}
    body = conn.placement.get(f"/allocations/{server_id}").json()["allocations"]
    return {names[rp]: a["resources"] for rp, a in body.items()}


def test_snapshot_equals_placement_for_every_class(cloud: Cloud) -> None:
    op, nova = cloud
    snap_id = op.ok("snapshot").out.strip()
    snap = json.loads(op.ok("snapshots", "show", snap_id, "--format", "json").out)
    view = placement_view(nova)
    assert {h["name"] for h in snap["hosts"]} == set(view) == {"p1", "p2", "p3", "g1", "g2"}
    for host in snap["hosts"]:
        inv = view[host["name"]]["inventories"]
        extra = {rc: v for rc, v in inv.items() if rc not in ("VCPU", "MEMORY_MB", "DISK_GB")}
        assert set(host["resources"]) == set(extra), host["name"]
        for rc, got in host["resources"].items():
            want = extra[rc]
            assert {k: got[k] for k in want if k in got} == \
                {k: float(want[k]) for k in want if k in got}, (host["name"], rc)
        assert set(host["traits"]) == view[host["name"]]["traits"]
    # The vGPUs sit on a nested provider, and count toward its root's host.
    assert {rp.name for rp in nova.conn.placement.resource_providers()} >= \
        {"g1_vgpu_0", "g2_vgpu_0"}
    servers = nova.servers()
    for inst in snap["instances"]:
        held: dict[str, float] = {}
        for amounts in allocations(nova, servers[inst["name"]].id).values():
            for rc, amount in amounts.items():
                held[rc] = held.get(rc, 0) + amount
        assert {rc: v for rc, v in inst["resources"].items() if v or rc in held} == held, \
            inst["name"]
        assert inst["host"] == servers[inst["name"]].compute_host
    pin1 = next(i for i in snap["instances"] if i["name"] == "pin1")
    assert pin1["flavor_extra_specs"]["hw:cpu_policy"] == "dedicated"
    assert pin1["flavor_extra_specs"]["trait:HW_CPU_X86_AVX2"] == "required"


def forced_plan(op: Operator, *moves: tuple[str, str, str]) -> str:
    """Store and approve a plan the planner would never make, from a fresh snapshot."""
    snap_id = op.ok("snapshot").out.strip()
    snap = json.loads(op.ok("snapshots", "show", snap_id, "--format", "json").out)
    ids = {i["name"]: i["id"] for i in snap["instances"]}
    draft = PlanDraft(algorithm="forced", ranking=None, power_off=(), hosts_before=5,
                      hosts_after=5, lower_bound=0, migrations_lower_bound=0, spare=0,
                      migrations=tuple(Move(ids[n], n, s, d, 1) for n, s, d in moves))
    engine = make_engine(op.db_url)
    plan = save_plan(engine, draft, cloud=op.served.cloud_name, snapshot_id=snap_id)
    set_status(engine, plan.id, "approved")
    return plan.id


def test_a_move_onto_a_full_pcpu_host_is_caught_by_the_preflight(cloud: Cloud) -> None:
    """p3 holds 12 of its 16 dedicated CPUs: pin2 (8) may not go there. The pre-flight asks
    Placement (allocation candidates in p3's tree), skips the move and journals why; Nova
    is never asked to migrate it."""
    op, nova = cloud
    plan_id = forced_plan(op, ("pin2", "p2", "p3"))
    applied = op("apply", plan_id)
    assert applied.code == 1, applied.out + applied.err
    pin2 = nova.servers()["pin2"]
    assert (pin2.compute_host, pin2.status) == ("p2", "ACTIVE")
    assert nova.migrations(pin2.id) == []               # no live-migration call was made
    rows = journal.entries(make_engine(op.db_url), plan_id=plan_id)
    assert [(e.action, e.state) for e in rows] == [("migrate", journal.SKIPPED)]
    assert "Placement has no room left for its PCPU" in (rows[0].result or "")
    assert "PCPU" in applied.out + applied.err


def test_plans_apply_without_a_scheduler_refusal(cloud: Cloud) -> None:
    """zoned-bestfit packs pinned instances by their PCPU and vGPU ones by the nested VGPU
    inventory; Nova's scheduler accepts every move: each migration completed, none in
    error, and Placement holds each class on the destination's tree."""
    op, nova = cloud
    plan = op.plan("zoned-bestfit")
    moved = {m["instance_name"]: m for m in plan["migrations"]}
    assert moved.keys() & {"pin1", "pin2", "pin3"} and moved.keys() & {"gpu1", "gpu2"}, plan
    assert plan["power_off"], plan
    applied = op("apply", plan["id"])
    assert applied.code == 0, applied.out + applied.err
    rows = journal.entries(make_engine(op.db_url), plan_id=plan["id"])
    migrate_rows = [e for e in rows if e.action == "migrate"]
    assert len(migrate_rows) == len(moved)
    assert all(e.state == journal.SUCCEEDED for e in migrate_rows), \
        [(e.target, e.state, e.result) for e in migrate_rows]
    servers = nova.servers()
    for name, move in moved.items():
        server = servers[name]
        assert (server.compute_host, server.status) == (move["destination"], "ACTIVE")
        records = nova.migrations(server.id)
        assert [r.status for r in records] == ["completed"], name   # no refusal, no retry
        held = allocations(nova, server.id)
        tree = {p for p in held if p == move["destination"] or
                p.startswith(move["destination"] + "_")}
        assert set(held) == tree, (name, held)
        if name.startswith("pin"):
            assert held[move["destination"]].get("PCPU") and \
                not held[move["destination"]].get("VCPU")
        if name.startswith("gpu"):
            assert held[f"{move['destination']}_vgpu_0"] == {"VGPU": 2}
    power = nova.power()
    for host in plan["power_off"]:
        assert power[host] == "off"
        assert not [n for n, s in servers.items() if s.compute_host == host]
