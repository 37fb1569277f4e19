"""A host is powered off only if Placement holds nothing on it: a resize to the host claims
it in Placement while the server still names its old host (found on the real Nova, where
the executor powered off the destination of a resize in flight)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from consolidator.executor import Executor
from consolidator.model import Host


class QuietNova:
    """No servers on the host, its service disabled for the plan; Placement usage given."""

    def __init__(self, usages: dict[str, float]) -> None:
        self._usages = usages

    def servers_on(self, compute_host: str) -> list[dict[str, Any]]:
        return []

    def services(self) -> dict[str, dict[str, Any]]:
        return {"a2": {"status": "disabled", "disabled_reason": "consolidator: plan p-1"}}

    def usages(self, provider: str) -> dict[str, float]:
        return self._usages


def problem(usages: dict[str, float]) -> str | None:
    executor = Executor.__new__(Executor)
    executor.nova = QuietNova(usages)  # type: ignore[assignment]
    executor.hosts = {"a2": Host(name="a2", vcpus=8, memory_mb=16384, disk_gb=200)}
    plan = SimpleNamespace(id="p-1", draft=SimpleNamespace(power_off=("a2",)))
    return executor._power_preconditions(plan, "a2", "consolidator: plan p-1")  # type: ignore[arg-type]


def test_an_empty_host_may_be_powered_off() -> None:
    assert problem({"VCPU": 0, "MEMORY_MB": 0, "DISK_GB": 0}) is None


def test_a_host_with_allocations_in_placement_is_not() -> None:
    assert problem({"VCPU": 2, "MEMORY_MB": 2048, "DISK_GB": 0}) == \
        "Placement still has allocations on it (MEMORY_MB 2048, VCPU 2)"
