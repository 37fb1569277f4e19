"""The reference policies of Beloglazov & Buyya (2012), as CloudSim 3.0.3 runs them.

- Overload detection (section 6.1): THR, a static threshold on the host's CPU utilisation;
  LR, a regression line through the host's last 10 utilisation samples, predicting one
  interval ahead (the migration time rounded up), times a safety parameter, overloaded at 1;
  THR 0.7 until a host has 10 samples.
- VM selection (6.2.1): MMT, the VM with the least RAM (the shortest migration; of equal RAM
  the one longest on the host, first in CloudSim's VM list), until the host is no longer
  overloaded.
- Placement (algorithm 2): PABFD, each VM (by decreasing demand) to the host whose power rises
  least, among those with room that would not be overloaded after it (an empty host may
  always take it); then the under-utilised hosts, least utilised first, are emptied onto the
  others when all of their VMs find a place, and switched off. As in CloudSim, the hosts
  idle when last measured (switched off) take no VM from an under-utilised host.
- Underload (6.4): "this process is iteratively repeated for all hosts that have not been
  considered as being overloaded": a host that took VMs from an overloaded host may itself be
  emptied (CloudSim 3.0.3 likewise excludes no receiver: it extracts them from an empty map).
  A VM moved twice in one decision (A to X, then X to Y) is two entries of CloudSim's
  migration map and two of its migrations; the replay counts it so (``moves``).
- PABFD's "increase of the power consumption caused by the allocation" is, in CloudSim, the
  host's power after the allocation (with what this decision already put on it) minus its
  power as last measured (``host.getPower()``): a host that took one VM this decision looks
  dearer for the next, so the VMs spread.

What CloudSim 3.0.3 does to the workload, and the replay with it (``cloudsim_workload``):

- A VM whose requested MIPS is 0 at an update ends: PowerDatacenter removes it as completed
  (``host.getCompletedVms()``: requested MIPS 0, not migrating) and it never comes back. The
  PlanetLab model interpolates between samples, so a VM ends at the first two zero samples
  in a row. On 2011-03-03 this ends 531 of the 1,052 VMs, most of them early in the day, and
  the VMs left hold 84 % of the demand; each row says how many VMs ended and how much demand
  they took with them. This, not the policies, is why CloudSim makes half the migrations a
  replay of all 1,052 VMs makes: with it the replay comes within 1 % of CloudSim's
  migrations and 4 % of its energy for both LR-MMT-1.2 and THR-MMT-0.8.
- A VM's history records only non-zero samples (PowerVm's ``utilization != 0``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from consolidator.core.errors import ModelError
from consolidator.core.replay.datacentre import DataCentre
from consolidator.core.replay.trace import Trace, end_steps, ended_note

#: Samples of history CloudSim keeps per VM, and the LR window.
HISTORY, WINDOW = 30, 10
#: The THR threshold LR falls back to while a host has fewer than WINDOW samples.
LR_FALLBACK = 0.7


def _lr_coefficients(n: int = WINDOW, ahead: int = 1) -> np.ndarray:
    """c such that c . history (newest first) is CloudSim's LR prediction: the least-squares
    line through the n samples (oldest at x = 1), evaluated at x = n + ahead. CloudSim's
    loess weights take effect only when 40 % of them are zero, which its inverse tricube
    weights never are, so the fit is plain least squares; it is linear in the history."""
    x = np.arange(1, n + 1, dtype=float)
    xc = x - x.mean()
    coef = 1.0 / n + xc * (n + ahead - x.mean()) / (xc @ xc)
    result: np.ndarray = coef[::-1]           # newest first
    return result


@dataclass
class Reference:
    """THR-MMT-x or LR-MMT-x with PABFD placement."""

    name: str
    detector: str            # "thr" | "lr"
    parameter: float         # the THR threshold or the LR safety parameter
    full_power: bool = False
    #: Hosts that took VMs from overloaded hosts are not emptied in the same decision. Off by
    #: default: the paper (6.4) excludes only the overloaded hosts, and so does CloudSim
    #: 3.0.3's code (its comment says otherwise; it passes an empty migration map).
    exclude_receivers: bool = False
    #: PABFD's power increase measured from the host's last measured load (CloudSim's
    #: host.getPower()) instead of from what this decision has put on it.
    measured_base: bool = True
    #: CloudSim's workload: a VM ends at its first two zero samples in a row, and VM
    #: histories keep only non-zero samples (see the module's docstring).
    cloudsim_workload: bool = True
    _coef: np.ndarray = field(default_factory=_lr_coefficients, repr=False)

    # -- set-up --------------------------------------------------------------------------

    def start(self, trace: Trace, dc: DataCentre) -> tuple[np.ndarray, np.ndarray]:
        """CloudSim's initial placement (see initial_placement)."""
        self.dc, self.trace = dc, trace
        self.util, self.mips, self.ram = trace.utilisation, trace.mips, trace.ram_mb
        self.cap, self.core = dc.capacity, dc.core_mips
        self.history = np.zeros((trace.vms, HISTORY))
        self.ends = end_steps(trace) if self.cloudsim_workload else \
            np.full(trace.vms, trace.steps + 1)
        self.placement = initial_placement(trace, dc)
        #: When each VM came to its host: MMT takes the first of equal RAM in the host's VM
        #: list, the one there longest (CloudSim appends a VM that arrives).
        self.arrived = np.zeros(trace.vms, dtype=np.int64)
        return self.placement.copy(), np.bincount(self.placement, minlength=dc.hosts) > 0

    def notes(self) -> tuple[str, ...]:
        """How many VMs ended, as in CloudSim, and the demand they took with them."""
        return ended_note(self.name, self.trace, self.ends)

    def _load(self, demand: np.ndarray) -> None:
        """Recompute the hosts' loads, LR sums and history lengths for a demand vector."""
        h = self.dc.hosts
        self.demand = demand
        placed = self.placement >= 0
        rows = self.placement[placed]
        self.host_load = np.bincount(rows, demand[placed], minlength=h)
        self.vm_q = self.mips * (self.history[:, :WINDOW] @ self._coef)
        self.vm_long = np.asarray(self.history[:, WINDOW - 1:].any(axis=1))
        self.host_q = np.bincount(rows, self.vm_q[placed], minlength=h)
        self.host_long = np.bincount(rows, self.vm_long[placed], minlength=h)
        self.host_pop = np.bincount(rows, minlength=h)

    def _move(self, v: int, h: int) -> None:
        """Put VM v on host h (-1: nowhere), keeping the host sums."""
        old = self.placement[v]
        for row, sign in ((old, -1), (h, 1)):
            if row >= 0:
                self.host_load[row] += sign * self.demand[v]
                self.host_q[row] += sign * self.vm_q[v]
                self.host_long[row] += sign * int(self.vm_long[v])
                self.host_pop[row] += sign
        self.placement[v] = h

    def _record(self, util: np.ndarray) -> None:
        """Add a sample to each VM's history, newest first. CloudSim's PowerVm records a
        sample only when it is not 0 (``utilization != 0`` in updateVmProcessing), so an idle
        VM keeps its older samples, and the LR window spans its last 10 busy samples."""
        rows = np.flatnonzero(util != 0) if self.cloudsim_workload else slice(None)
        self.history[rows, 1:] = self.history[rows, :-1]
        self.history[rows, 0] = util[rows]

    # -- overload ------------------------------------------------------------------------

    def _over(self, load: np.ndarray, q: np.ndarray, long: np.ndarray,
              cap: np.ndarray) -> np.ndarray:
        """Whether hosts with these sums are overloaded, by the policy's detector."""
        util = np.minimum(load / cap, 1.0)
        result: np.ndarray
        if self.detector == "thr":
            result = util > self.parameter
        else:
            predicted = q / cap * self.parameter
            result = np.where(long > 0, predicted >= 1.0, util > LR_FALLBACK)
        return result

    def _host_over(self, h: int) -> bool:
        return bool(self._over(self.host_load[h:h + 1], self.host_q[h:h + 1],
                               self.host_long[h:h + 1], self.cap[h:h + 1])[0])

    # -- placement -----------------------------------------------------------------------

    def _find_host(self, v: int, excluded: np.ndarray, among: np.ndarray | None = None) -> int:
        """PABFD: the host whose power rises least when VM v joins it (the first of equals),
        or -1."""
        rows = self._candidates(excluded) if among is None else among[~excluded[among]]
        if len(rows) == 0:
            return -1
        d = self.demand[v]
        load, cap = self.host_load[rows], self.cap[rows]
        after = load + d
        fits = (self.core[rows] >= d) & (after <= cap + 1e-9)
        over = self._over(after, self.host_q[rows] + self.vm_q[v],
                          self.host_long[rows] + int(self.vm_long[v]), cap)
        fits &= ~((load > 0) & over)
        if not fits.any():
            return -1
        before = self.measured_watts[rows] if self.measured_base else \
            self.dc.power(load / cap, rows)
        diff = self.dc.power(after / cap, rows) - before
        diff[~fits] = np.inf
        return int(rows[int(np.argmin(diff))])

    def _candidates(self, excluded: np.ndarray) -> np.ndarray:
        """The hosts not excluded, in order, with only the first idle one of each model:
        idle hosts of one model are alike to PABFD."""
        free = ~excluded
        busy = free & (self.host_load > 0)
        idle = free & ~busy
        model = self.dc.model_index
        firsts = [np.flatnonzero(idle & (model == m))[:1] for m in range(len(self.dc.models))]
        return np.sort(np.concatenate([np.flatnonzero(busy), *firsts]))

    def _place_all(self, vms: list[int], excluded: np.ndarray,
                   among: np.ndarray | None = None) -> dict[int, int] | None:
        """Place VMs (by decreasing demand) one by one; their new hosts, or None when one
        finds no host (then each is back where it was)."""
        moved: dict[int, int] = {}
        was = {v: int(self.placement[v]) for v in vms}
        for v in sorted(vms, key=lambda i: -self.demand[i]):
            h = self._find_host(v, excluded, among)
            if h < 0:
                for u in moved:
                    self._move(u, was[u])
                return None
            self._move(v, h)
            moved[v] = h
        self.moves += len(moved)
        return moved

    # -- one decision --------------------------------------------------------------------

    def step(self, k: int, placement: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Detect overloaded hosts, move their MMT VMs by PABFD, then empty the under-used."""
        self._record(self.util[:, k])
        placement = placement.copy()
        placement[self.ends <= k] = -1          # ended: on no host from now on
        self.placement = placement.copy()
        self.origin = placement.copy()
        self._load(self.util[:, k] * self.mips)
        cap = self.cap
        self.measured = np.minimum(self.host_load / cap, 1.0)
        self.measured_watts = self.dc.power(self.measured)
        overloaded = self._over(self.host_load, self.host_q, self.host_long, cap)
        overloaded &= self.host_pop > 0
        leaving: list[int] = []
        for h in np.flatnonzero(overloaded).tolist():
            here: list[int] = np.flatnonzero(self.placement == h).tolist()
            while here:
                v = min(here, key=lambda i: (self.ram[i], self.arrived[i], i))
                here.remove(v)
                leaving.append(v)
                self._move(v, -1)
                if not self._host_over(h):
                    break
        receivers: set[int] = set()
        self.moves = 0
        for v in sorted(leaving, key=lambda i: -self.demand[i]):
            h = self._find_host(v, overloaded)
            self._move(v, h if h >= 0 else int(self.origin[v]))
            if h >= 0:
                receivers.add(h)
                self.moves += 1
        self._empty_underused(overloaded, receivers)
        self.arrived[self.placement != self.origin] = k + 1
        return self.placement.copy(), self.host_pop > 0

    def _empty_underused(self, overloaded: np.ndarray, receivers: set[int]) -> None:
        """CloudSim's getMigrationMapFromUnderUtilizedHosts."""
        off = self.measured <= 0    # CloudSim's switched-off hosts: idle when last measured
        skip = overloaded | off
        if self.exclude_receivers:
            skip[list(receivers)] = True
        excluded = overloaded | off
        while not skip.all():
            util = np.where(skip, np.inf, self.measured)
            h = int(np.argmin(util))
            if not np.isfinite(util[h]) or util[h] <= 0:
                break
            skip[h] = excluded[h] = True
            vms: list[int] = np.flatnonzero(self.placement == h).tolist()
            if not vms:
                continue
            among = np.flatnonzero(~excluded)
            moved = self._place_all(vms, excluded, among)
            if moved:
                skip[list(set(moved.values()))] = True


def initial_placement(trace: Trace, dc: DataCentre) -> np.ndarray:
    """CloudSim's initial placement: each VM in trace order, by its full MIPS, on the host
    with room whose power at (allocated + VM) / capacity is least (at creation the VMs
    already placed request nothing, so no overload check binds). Host row per VM."""
    cap, core, mips = dc.capacity, dc.core_mips, trace.mips
    placement = np.full(trace.vms, -1, dtype=np.int64)
    allocated = np.zeros(dc.hosts)
    for v in range(trace.vms):
        after = allocated + mips[v]
        watts = np.where((core >= mips[v]) & (after <= cap),
                         dc.power(np.minimum(after / cap, 1.0)), np.inf)
        h = int(np.argmin(watts))
        if not np.isfinite(watts[h]):
            raise ModelError(f"VM {trace.names[v]!r} ({mips[v]:g} MIPS) fits on no host")
        allocated[h] = after[h]
        placement[v] = h
    return placement


def reference_policy(name: str) -> Reference:
    """thr-mmt-X or lr-mmt-X (X: the threshold or safety parameter)."""
    parts = name.lower().split("-")
    if len(parts) != 3 or parts[0] not in ("thr", "lr") or parts[1] != "mmt":
        raise ModelError(f"unknown policy {name!r}: choose npa, consolidator, "
                         f"thr-mmt-<threshold> or lr-mmt-<safety>")
    try:
        parameter = float(parts[2])
    except ValueError:
        raise ModelError(f"policy {name!r}: {parts[2]!r} is not a number") from None
    if not 0 < parameter < 10:
        raise ModelError(f"policy {name!r}: the parameter must lie between 0 and 10")
    return Reference(name.lower(), parts[0], parameter)


@dataclass
class NoPowerManagement:
    """npa: every host on at full power, nothing moves (the paper's NPA)."""

    name: str = "npa"
    full_power: bool = True

    def start(self, trace: Trace, dc: DataCentre) -> tuple[np.ndarray, np.ndarray]:
        """CloudSim's initial placement; all hosts on."""
        self.on = np.ones(dc.hosts, dtype=bool)
        return initial_placement(trace, dc), self.on

    def step(self, k: int, placement: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Nothing changes."""
        return placement, self.on

    def notes(self) -> tuple[str, ...]:
        """Nothing to note."""
        return ()
