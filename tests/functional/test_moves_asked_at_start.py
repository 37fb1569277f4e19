"""Issue 45, item 3: a queued migration is asked of the gate again at the moment it starts,
not only when its wave became ready. With --max-parallel 1 the moves of a wave wait for a
slot long after their wave's pre-checks: an instance pinned meanwhile was still moved, and a
destination whose shutdown became pending (or whose BMC went off) meanwhile still received
migrations. Abort and force-complete at a migration's timeout ask the gate too."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from consolidator.core import host_gate as hg
from consolidator.execution.executor import Executor, ExecutorSettings
from consolidator.openstack.nova import Nova
from consolidator.power.bmc_file import load_bmc_file
from consolidator.power.catalog import driver_for
from consolidator.store import host_states, journal
from consolidator.store.snapshots import load_snapshot
from tests.functional.test_executor import Bed, fake_bed
from tests.functional.test_executor import bed as bed  # noqa: F401 - the fixture
from tests.functional.test_power_safety import assert_no_work_on_a_powered_off_host


def one_at_a_time(bed: Bed, **settings: float) -> Executor:
    """The bed's executor with --max-parallel 1."""
    configs = load_bmc_file(bed.cloud.write_bmc_yaml(bed.tmp / "bmc.yaml"))
    snap = load_snapshot(bed.engine, bed.snapshot_id)
    return Executor(bed.engine, Nova(bed.cloud.connect()), snap.info.cloud, snap.cluster,
                    ExecutorSettings(poll_interval=0.02, max_parallel=1, power_timeout=20,
                                     **settings),
                    lambda h: driver_for(configs[h]) if h in configs else None)


def pin(bed: Bed, server_id: str) -> None:
    """What 'openstack server set --property consolidator:exclude=true' does (the fake cloud
    serves no metadata API: its server record is changed in place)."""
    with bed.cloud.state.locked():
        record = next(s for s in bed.cloud.state.server_list if s.id == server_id)
        record.model = replace(record.model, metadata={**record.model.metadata,
                                                       "consolidator:exclude": "true"})


def test_a_move_waiting_for_a_slot_is_asked_again_when_it_starts(tmp_path: Path) -> None:
    with fake_bed(tmp_path, migration_bandwidth_mb_s=8192.0) as bed:   # 0.5 s a move
        plan = bed.plan()
        moves = list(plan.draft.migrations)
        assert len(moves) >= 4
        executor = one_at_a_time(bed)
        ids = {m.instance_name: m.instance_id for m in moves}
        lines: list[str] = []
        acted: dict[str, str] = {}

        def report(line: str) -> None:
            lines.append(line)
            if line.startswith("  migrate ") and not acted:
                first = line.split()[1]
                # while the first move runs: an operator pins the next one queued, ...
                pinned = next(m for m in moves if m.instance_name != first)
                pin(bed, ids[pinned.instance_name])
                acted["pinned"] = pinned.instance_name
                # ... and another actor asks for the shutdown of a destination still to come
                going = next(m.destination for m in moves
                             if m.instance_name not in (first, pinned.instance_name))
                host_states.change(bed.engine, executor.gate.key, going, hg.POWERING_OFF,
                                   actor=hg.OPERATOR, why="shutdown requested elsewhere")
                acted["going"], acted["first"] = going, first
        executor.report = report
        outcome = executor.run(plan)
        started = [e.params.get("instance") for e in journal.entries(bed.engine,
                                                                       plan_id=plan.id)
                   if e.action == "migrate" and e.state != journal.SKIPPED]
        assert started == [acted["first"]], (started, lines)
        assert "pinned" in outcome.skipped[acted["pinned"]], outcome.skipped
        assert any("may be going down" in why for why in outcome.skipped.values()), \
            outcome.skipped
        pinned_id = ids[acted["pinned"]]
        source = next(m.source for m in moves if m.instance_name == acted["pinned"])
        assert bed.cloud.server_host(pinned_id) == source
        assert_no_work_on_a_powered_off_host(bed.cloud.state.summary())


def test_a_destination_whose_bmc_reads_off_gets_no_queued_move(tmp_path: Path) -> None:
    """The BMC of a destination still to come reads off by the time its move starts."""
    with fake_bed(tmp_path, migration_bandwidth_mb_s=8192.0) as bed:
        plan = bed.plan()
        moves = list(plan.draft.migrations)
        executor = one_at_a_time(bed)
        lookup = executor.power
        cut: set[str] = set()
        first: list[str] = []

        class ReadsOff:
            """The destination's BMC, reading off once it is cut."""

            def __init__(self, real: object, name: str) -> None:
                self.real, self.name = real, name

            def __getattr__(self, attr: str) -> object:
                return getattr(self.real, attr)

            def power_state(self) -> str:
                return "off" if self.name in cut else self.real.power_state()

        def power(name: str) -> object:
            driver = lookup(name)
            return ReadsOff(driver, name) if driver is not None else None
        executor.power = power

        def report(line: str) -> None:
            if line.startswith("  migrate ") and not first:
                first.append(line.split()[1])
                cut.update(m.destination for m in moves)
        executor.report = report
        outcome = executor.run(plan)
        started = [e.params.get("instance") for e in journal.entries(bed.engine,
                                                                       plan_id=plan.id)
                   if e.action == "migrate" and e.state != journal.SKIPPED]
        assert started == first, started
        assert any("reads off" in why for why in outcome.skipped.values()), outcome.skipped


def test_a_force_complete_onto_a_destination_going_down_becomes_an_abort(bed: Bed  # noqa: F811
                                                                         ) -> None:
    """A hanging migration reaches its timeout (on_timeout force-complete) after its
    destination's shutdown was requested: forcing it would land the instance on a host going
    down, so the gate refuses and it is aborted instead (the instance stays on its source)."""
    plan = bed.plan()
    victim = next(m for m in plan.draft.migrations if m.source == "c4")
    bed.cloud.add_fault({"type": "migration_hangs", "instance": victim.instance_name})
    executor = bed.executor(migration_timeout=1.0, on_timeout="force-complete")

    def report(line: str) -> None:
        if line.startswith(f"  migrate {victim.instance_name} "):
            host_states.change(bed.engine, executor.gate.key, victim.destination,
                               hg.POWERING_OFF, actor=hg.OPERATOR, why="shutdown elsewhere")
    executor.report = report
    outcome = executor.run(plan)
    actions = [(e.action, e.state) for e in journal.entries(bed.engine)
               if e.target == victim.instance_id]
    assert ("abort", journal.SUCCEEDED) in actions, actions
    assert not [a for a in actions if a[0] == "force_complete"], actions
    assert bed.cloud.server_host(victim.instance_id) == "c4"
    assert victim.instance_name in outcome.failed
    assert_no_work_on_a_powered_off_host(bed.cloud.state.summary())
