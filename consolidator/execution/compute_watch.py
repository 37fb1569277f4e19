"""The post-condition of a power-off: the target's own nova-compute stops reporting, and no
other does. A BMC entry that reaches another host's system (a mis-wired system_id, address or
port) powers off the wrong host: its own compute goes silent while the target's keeps
reporting. Nova's clock is never compared with ours: only whether each service's updated_at
(Nova's heartbeat stamp) changes between reads.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, Protocol

#: New heartbeats every other reporting compute must show before the target counts as silent:
#: with the first one possibly sent before the power-off, two more span a full report
#: interval, in which a live target would have reported at least once more.
OTHERS_ROUNDS = 3
#: New heartbeats of the target that prove it still runs (one may have been under way when
#: its BMC read off).
TARGET_ALIVE = 2


class Services(Protocol):
    """What the watch reads: Nova's nova-compute services by host."""

    def services(self) -> dict[str, dict[str, Any]]:
        """Every nova-compute service by its host."""
        ...


def _live(service: Mapping[str, Any] | None) -> bool:
    return (service is not None and bool(service) and service.get("state") == "up"
            and not service.get("forced_down"))


def reporting(before: Mapping[str, dict[str, Any]],
              after: Mapping[str, dict[str, Any]]) -> set[str]:
    """The computes that reported between two reads: up, not forced down, with a newer
    heartbeat stamp."""
    return {host for host, service in after.items() if _live(service)
            and service.get("updated_at") != (before.get(host) or {}).get("updated_at")}


def silent_after_power_off(nova: Services, target: str, before: Mapping[str, dict[str, Any]], *,
                           poll: float, deadline_s: float) -> str | None:
    """None once the target's nova-compute has stopped reporting while every other compute
    that reported before the power-off (``before``: the services read right before it) keeps
    doing so; else why not, as soon as that is known."""
    first = nova.services()
    others = reporting(before, first) - {target}
    seen = {host: [first[host].get("updated_at")] for host in others}
    target_stamps = {(first.get(target) or {}).get("updated_at")}
    deadline = time.monotonic() + deadline_s
    while others and not all(len(seen[h]) > OTHERS_ROUNDS for h in others):
        if time.monotonic() > deadline:
            quiet = sorted(h for h in others if len(seen[h]) == 1)
            if quiet:
                return _other_stopped(quiet, target)
            return None
        time.sleep(poll)
        now = nova.services()
        target_stamps.add((now.get(target) or {}).get("updated_at"))
        if _live(now.get(target)) and len(target_stamps) > TARGET_ALIVE:
            return (f"its own nova-compute ({target}) still reports after its BMC read off: "
                    f"the BMC entry reaches another system")
        for host in sorted(others):
            service = now.get(host)
            if service is None or service.get("forced_down"):
                others.discard(host)        # an operator fenced it: nothing to judge
            elif service.get("state") != "up":
                return _other_stopped([host], target)
            elif service.get("updated_at") != seen[host][-1]:
                seen[host].append(service.get("updated_at"))
    return None


def _other_stopped(hosts: list[str], target: str) -> str:
    return (f"nova-compute on {', '.join(hosts)} stopped reporting when {target}'s BMC "
            f"powered off: the BMC entry of {target} reaches another host's system")
