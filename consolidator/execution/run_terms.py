"""What one executor run is given and gives back: its limits and timings, and its outcome."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from consolidator.core.plan import Move, StoredPlan

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from consolidator.core.model import Cluster, Host
    from consolidator.execution.gate import Gate
    from consolidator.execution.host_power import GuardedPower
    from consolidator.execution.nova_port import NovaPort
    from consolidator.execution.progress import MigrationListener, ProgressListener
    from consolidator.power.driver import PowerDriver
    from consolidator.store.leases import Guard, LeaseLostError

Reporter = Callable[[str], None]
PowerLookup = Callable[[str], "PowerDriver | None"]


@dataclass(frozen=True)
class ExecutorSettings:
    """Limits and timings of a run."""

    max_parallel: int = 4
    migration_timeout: float = 1800.0
    #: The longest wait between two reads of a migrating server (the backoff's cap).
    poll_interval: float = 2.0
    #: The first wait; it doubles up to poll_interval.
    poll_first: float = 0.1
    power_timeout: float = 600.0
    lease_ttl: float = 60.0
    #: What to do with a live migration that outlives migration_timeout: "abort" it through
    #: Nova, or "force-complete" it.
    on_timeout: str = "abort"
    #: Live migrations into one destination at once.
    max_per_destination: int = 2
    #: Minutes of low demand every power-off waits for (0: none); see consolidator.core.demand.
    low_demand_window: float = 0.0
    #: Demand (mean CPU use over the powered-on hosts' vCPUs) at or below which it is low.
    low_demand_threshold: float = 0.5


@dataclass
class Outcome:
    """What a run did, for the summary and the plan's final state."""

    migrated: list[Move] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)          # instance name -> reason
    skipped: dict[str, str] = field(default_factory=dict)         # instance name -> reason
    powered_off: list[str] = field(default_factory=list)
    powered_on: list[str] = field(default_factory=list)
    left_on: dict[str, str] = field(default_factory=dict)          # host -> reason
    #: Hosts the plan did not power off cleanly whose BMC does not read on: host -> reason.
    not_on: dict[str, str] = field(default_factory=dict)
    interrupted: bool = False
    stopped: str = ""                                              # why it stopped early

    @property
    def ok(self) -> bool:
        """Whether everything the plan asked for was done."""
        return not (self.failed or self.skipped or self.left_on or self.not_on
                    or self.interrupted)


class StartCheck(Protocol):
    """The check a move asks right before it starts (execution/move_checks.py's MoveChecks;
    a protocol here, so that the steps need not import the checks that import them)."""

    def at_start(self, move: Move) -> str | None:
        """Why the move may not start now, or None."""
        ...


class Run(Protocol):
    """What the executor's parts (its steps and checks) share of one run: the cloud, the
    gate and guarded power path, the lease, and the run's stop and bookkeeping."""

    engine: Engine
    nova: NovaPort
    cloud: str
    cluster: Cluster
    settings: ExecutorSettings
    power: PowerLookup
    report: Reporter
    hosts: dict[str, Host]
    gate: Gate

    @property
    def checks(self) -> StartCheck:
        """The checks of its moves (each wave's, and each move's as it starts)."""
        ...

    guarded: GuardedPower
    guard: Guard | None
    stop: threading.Event
    abort: threading.Event
    running: int
    running_lock: threading.Lock
    progress: ProgressListener | None
    on_migration: MigrationListener | None
    blocked: dict[str, str]

    def block(self, host: str, why: str) -> None:
        """Leave a source host alone from now on."""
        ...

    def begin(self, plan: StoredPlan, action: str, target: str,
              params: dict[str, object]) -> int:
        """The lease-checked journal row before a destructive call."""
        ...

    def lost_at(self, exc: LeaseLostError) -> str:
        """Count the lease lost; the run's reason."""
        ...
