"""The executor's checks right before each wave's moves start: each move's instance and
hosts read live, the gate asked (the instance may move, the destination may receive), then
Placement asked whether each destination takes the wave's arrivals together; and again, for
each move, at the moment it starts (a move may wait for a slot long after its wave's check).
A move that fails is skipped and journaled, and its source host is left alone from then on."""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

from consolidator.core import host_gate as hg
from consolidator.core.model import Cluster
from consolidator.core.plan import Move, StoredPlan
from consolidator.execution.migration_step import move_params
from consolidator.execution.run_terms import Outcome, Run
from consolidator.openstack import placement
from consolidator.power.driver import read_power
from consolidator.store import journal

if TYPE_CHECKING:
    from consolidator.openstack.nova import ServerState


class MoveChecks:
    """The pre-checks of one run's moves."""

    def __init__(self, run: Run) -> None:
        self.run = run
        #: The servers check_move read, by id (the gate is asked about the same read).
        self._read: dict[str, ServerState] = {}

    def precheck(self, plan: StoredPlan, moves: list[Move], outcome: Outcome) -> list[Move]:
        """The moves of a wave whose pre-checks pass on the live state; the others are
        skipped, and so is everything else from their source host.

        Each move's instance and hosts are read live and put to the gate; then, per
        destination, Placement is asked whether it takes the wave's arrivals together (free
        room of every class, then one allocation-candidates request with their traits)."""
        run = self.run
        services = run.nova.services()
        power: dict[str, str | None] = {}
        passed: list[Move] = []
        for move in moves:
            reason = run.blocked.get(move.source) or self.check_move(move, services) or \
                self.destination_off(move.destination, power) or \
                self.gate_refuses(move, services, power)
            if reason is None:
                passed.append(move)
            else:
                self.skip(plan, move, reason, outcome)
        arriving: dict[str, list[Move]] = defaultdict(list)
        for move in passed:
            arriving[move.destination].append(move)
        refused: dict[str, str] = {}
        for dest, group in arriving.items():
            found = run.nova.refusals(run.hosts[dest].id,
                                      [demand_of(run.cluster, m) for m in group])
            refused.update({m.instance_id: f"destination {dest}: {found[m.instance_id]}"
                            for m in group if m.instance_id in found})
        ready = []
        for move in passed:
            if move.instance_id in refused:
                self.skip(plan, move, refused[move.instance_id], outcome)
            else:
                ready.append(move)
        return ready

    def at_start(self, move: Move) -> str | None:
        """Why the move may not start now, asked at the moment it starts: its instance and
        hosts read live, its destination's BMC read, the gate asked again (pinned since its
        wave's check, its destination held, drained or going down since...); None if it
        may."""
        services = self.run.nova.services()
        power: dict[str, str | None] = {}
        return self.run.blocked.get(move.source) or self.check_move(move, services) or \
            self.destination_off(move.destination, power) or \
            self.gate_refuses(move, services, power)

    def destination_off(self, name: str, power: dict[str, str | None]) -> str | None:
        """Why a destination may not receive because its BMC reads off (read once a wave);
        Nova may still report a powered-off compute up."""
        if name not in power:
            driver = self.run.power(name)
            power[name] = read_power(driver) if driver is not None else None
        if power[name] == "off":
            return f"destination {name}: its BMC reads off"
        return None

    def gate_refuses(self, move: Move, services: dict[str, dict],
                     power: dict[str, str | None]) -> str | None:
        """The gate's word on the move: may its instance move (pinned, excluded project,
        source kept out), may its destination receive (held, drained, going down...)."""
        run = self.run
        server = self._read.pop(move.instance_id, None) or run.nova.server(move.instance_id)
        if server is None:
            return "the instance no longer exists"
        source, dest = run.hosts[move.source], run.hosts[move.destination]
        return run.gate.ask(hg.MIGRATE, source, instance=server,
                            instance_name=move.instance_name, services=services) or \
            run.gate.ask(hg.RECEIVE, dest, services=services,
                         power=power.get(move.destination) or "")

    def skip(self, plan: StoredPlan, move: Move, reason: str, outcome: Outcome) -> None:
        """Skip a move, leave its source host alone from now on, and journal why."""
        run = self.run
        outcome.skipped[move.instance_name] = reason
        run.block(move.source, f"pre-check of {move.instance_name} failed: {reason}")
        journal.record(run.engine, cloud=run.cloud, plan_id=plan.id, action="migrate",
                       target=move.instance_id, state=journal.SKIPPED, result=reason,
                       params=move_params(move))
        run.report(f"  skip {move.instance_name}: {reason}")

    def check_move(self, move: Move, services: dict[str, dict]) -> str | None:
        """Why the move may not start: its hosts unknown, its instance gone, elsewhere or
        busy, its destination not enabled and up; None if it may."""
        run = self.run
        source, dest = run.hosts.get(move.source), run.hosts.get(move.destination)
        if source is None or dest is None:
            return "the plan names a host the snapshot does not know"
        server = run.nova.server(move.instance_id)
        if server is None:
            return "the instance no longer exists"
        self._read[move.instance_id] = server
        if server.compute_host != source.compute_host:
            return f"the instance is on {server.compute_host}, not on {move.source}"
        if server.status != "ACTIVE" or server.task_state:
            return f"the instance is {server.status}/{server.task_state or '-'}, not ACTIVE"
        service = services.get(dest.compute_host) or {}
        if service.get("status") != "enabled" or service.get("state") != "up":
            return (f"destination {move.destination} is "
                    f"{service.get('status', '?')}/{service.get('state', '?')}")
        return None


def demand_of(cluster: Cluster, move: Move) -> placement.Demand:
    """What a move's instance asks of its destination, keyed by its id."""
    inst = cluster.instances[cluster.instance_index[move.instance_id]]
    return placement.Demand(name=inst.id,
                            resources={rc: inst.amount(rc) for rc in cluster.resource_classes},
                            required=inst.required_traits, forbidden=inst.forbidden_traits)
