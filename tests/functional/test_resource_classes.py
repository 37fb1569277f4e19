"""PCPU, VGPU and traits against the fake cloud: the snapshot, plans that apply without one
refusal, and the pre-flight that catches a move Placement would refuse before Nova sees it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from consolidator.app.apply import PlanRun
from consolidator.app.config import config_from_sections
from consolidator.app.context import AppContext
from consolidator.app.planning import PlanRequest, check_live, make_plan
from consolidator.app.snapshots import record_snapshot
from consolidator.core.algorithms.catalog import ALGORITHMS
from consolidator.core.plan import Move, PlanDraft
from consolidator.emulators.fake.cloud import FakeCloud
from consolidator.power.bmc_file import load_bmc_file
from consolidator.power.catalog import driver_for
from consolidator.scenario.files import parse_scenario, read_document
from consolidator.store import journal
from consolidator.store.db import make_engine, upgrade
from consolidator.store.plans import save_plan, set_status
from tests.functional.cli import run

DATA = Path(__file__).resolve().parents[1] / "data"


def document(**changes: dict) -> dict:
    """The PCPU/VGPU scenario, with Redfish BMCs and fast migrations; changes by name."""
    doc = read_document(DATA / "pcpu-vgpu.yaml")
    for section in ("hosts", "instances"):
        for entry in doc[section]:
            entry.update(changes.get(entry["name"], {}))
    for host in doc["hosts"]:
        host["bmc"] = {"driver": "redfish"}
    return doc


@pytest.fixture
def bed(tmp_path: Path) -> Iterator[tuple[FakeCloud, AppContext]]:
    yield from _bed(tmp_path, document())


def _bed(tmp_path: Path, doc: dict) -> Iterator[tuple[FakeCloud, AppContext]]:
    engine = make_engine(f"sqlite:///{tmp_path / 'c.db'}")
    upgrade(engine)
    with FakeCloud(parse_scenario(doc), bmc=True, migration_bandwidth_mb_s=1e6,
                   service_up_delay_s=0.05, bmc_graceful_delay_s=0.05) as cloud:
        configs = load_bmc_file(cloud.write_bmc_yaml(tmp_path / "bmc.yaml"))
        config = config_from_sections({"executor": {"poll_interval": "0.02",
                                                    "power_timeout": "20"}})
        yield cloud, AppContext.of(config=config, engine=engine, connect=cloud.connect,
                                   power=lambda h: driver_for(configs[h]) if h in configs
                                   else None)


def test_snapshot_reads_every_class_nested_providers_and_traits(bed: tuple) -> None:
    cloud, ctx = bed
    snap, inventory = record_snapshot(ctx)
    live = snap.cluster
    expected = parse_scenario(document()).cluster
    assert live.resource_classes == expected.resource_classes
    for host in expected.hosts:
        got = live.hosts[live.host_index[host.name]]
        assert got.resources == host.resources           # VGPU read from the nested child
        assert set(host.traits) <= set(got.traits)
    by_name = {i.name: i for i in live.instances}
    for inst in expected.instances:
        assert [by_name[inst.name].amount(rc) for rc in expected.resource_classes] == \
            [inst.amount(rc) for rc in expected.resource_classes], inst.name
        assert by_name[inst.name].required_traits == inst.required_traits
    assert inventory.capacity_source == "placement"


@pytest.mark.parametrize("algorithm", ALGORITHMS.names())
def test_plans_apply_without_a_refusal(bed: tuple, algorithm: str) -> None:
    cloud, ctx = bed
    snap, _ = record_snapshot(ctx)
    plan = make_plan(ctx, snap, PlanRequest(algorithm=algorithm))
    assert plan.draft.migrations and check_live(ctx, plan, snap.cluster) == {}
    set_status(ctx.engine(), plan.id, "approved")
    outcome = PlanRun(ctx, plan.id).run()
    assert outcome.ok, outcome
    assert all(m["status"] == "completed" for m in cloud.state.summary()["migrations"])
    for move in plan.draft.migrations:
        assert cloud.server_host(move.instance_id) == move.destination


def forced(ctx: AppContext, snap: object, *moves: tuple[str, str, str]) -> str:
    """Store and approve a plan the planner would never make."""
    cluster = snap.cluster  # type: ignore[attr-defined]
    ids = {i.name: i.id for i in cluster.instances}
    draft = PlanDraft(algorithm="forced", ranking=None, power_off=(), hosts_before=5,
                      hosts_after=5, lower_bound=0, migrations_lower_bound=0, spare=0,
                      migrations=tuple(Move(ids[n], n, s, d, 1) for n, s, d in moves))
    plan = save_plan(ctx.engine(), draft, cloud=snap.info.cloud,  # type: ignore[attr-defined]
                     snapshot_id=snap.info.id)  # type: ignore[attr-defined]
    set_status(ctx.engine(), plan.id, "approved")
    return plan.id


def test_a_move_onto_a_full_pcpu_host_is_caught_by_the_preflight(tmp_path: Path) -> None:
    """p1 holds 12 of its 16 PCPU: pin2 (8 PCPU) may not go there. The pre-flight skips it
    with Placement's reason, and Nova is never asked (no migration record)."""
    doc = document(pin1={"resources": {"PCPU": 12, "VCPU": 0}, "vcpus": 12})
    for cloud, ctx in _bed(tmp_path, doc):
        snap, _ = record_snapshot(ctx)
        plan_id = forced(ctx, snap, ("pin2", "p2", "p1"))
        outcome = PlanRun(ctx, plan_id).run()
        assert "Placement has no room left for its PCPU" in outcome.skipped["pin2"]
        assert cloud.state.summary()["migrations"] == []
        entry = journal.entries(ctx.engine(), plan_id=plan_id)[-1]
        assert entry.state == journal.SKIPPED and "PCPU" in (entry.result or "")


def test_a_move_to_a_host_without_the_required_trait_is_caught(bed: tuple) -> None:
    cloud, ctx = bed
    snap, _ = record_snapshot(ctx)
    outcome = PlanRun(ctx, forced(ctx, snap, ("pin1", "p1", "p3"))).run()
    assert "no allocation candidate" in outcome.skipped["pin1"]
    assert cloud.state.summary()["migrations"] == []


def test_plan_check_live_lists_what_placement_would_refuse(tmp_path: Path) -> None:
    """A plan made from a snapshot of the cloud in which the hosts had room; since then
    other consumers claimed all that was left in Placement. (--check-live asks the cloud the
    snapshot was read from: a scenario snapshot is refused, test_front_door.py.)"""
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    assert run("db", "upgrade", db_url=db_url).code == 0
    with FakeCloud(parse_scenario(document())) as cloud:
        clouds = cloud.write_clouds_yaml(tmp_path / "clouds.yaml", name="lab")
        env = {"OS_CLIENT_CONFIG_FILE": str(clouds)}
        snapped = run("--cloud", "lab", "snapshot", db_url=db_url, env=env)
        assert snapped.code == 0, snapped.err
        snap = snapped.out.strip()
        with cloud.state.lock:      # new servers' claims: all that every host had left
            for name, rec in cloud.state.hosts.items():
                free = tuple(max(0, int(c) - u) for c, u in
                             zip(rec.capacity(), rec.used, strict=True))
                rec.allocate(f"another-consumer-{name}", free)
        result = run("--cloud", "lab", "plan", "--snapshot", snap, "-a", "zoned-bestfit",
                     "--check-live", db_url=db_url, env=env)
    assert result.code == 1, result.err
    assert "Placement has no room left for its" in result.err, result.err
    assert result.err.strip().splitlines()[-1].startswith(
        "consolidator: error: live check: Placement would refuse"), result.err
