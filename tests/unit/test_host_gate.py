"""The gate's one rule set (core/host_gate.py), pure: each rule, for each actor it binds."""

from __future__ import annotations

import pytest

from consolidator.core import host_gate as hg
from consolidator.core.constraints import Rules
from consolidator.core.maintenance import drain_reason
from consolidator.core.model import Host
from consolidator.core.scope import Scope

HOST = Host(name="c3", vcpus=8, memory_mb=1024, disk_gb=10, availability_zone="east")
OURS = "consolidator: emptied by plan p1 for power-off"


def facts(**kw: object) -> hg.HostFacts:
    return hg.HostFacts(host=kw.pop("host", HOST), **kw)  # type: ignore[arg-type]


def ask(step: str, actor: str, rules: Rules | None = None, instance: hg.InstanceFacts | None
        = None, **kw: object) -> hg.Verdict:
    return hg.verdict(step, facts(**kw), rules or Rules(), actor, instance)


@pytest.mark.parametrize("actor", sorted(hg.PLAN_ACTORS - {hg.DRAIN} | {hg.OPERATOR}))
def test_an_operator_hold_is_never_enabled_nor_given_work(actor: str) -> None:
    held = {"status": "disabled", "disabled_reason": "DIMM errors: RMA, keep off"}
    for step in (hg.ENABLE, hg.RECEIVE):
        found = ask(step, actor, **held)
        assert found.kind == hg.REFUSE and "held by the operator" in found.why
    # only the operator's own command powers it or disables it again
    for step in (hg.POWER_ON, hg.POWER_OFF, hg.DISABLE):
        assert ask(step, actor, **held).go == (actor == hg.OPERATOR)


def test_a_drained_host_comes_back_only_through_its_undrain() -> None:
    drained = {"status": "disabled", "disabled_reason": drain_reason("p9")}
    for actor in (hg.APPLY, hg.RESUME, hg.ROLLBACK, hg.RELIEF, hg.WATCH, hg.RAMP, hg.DRAIN):
        for step in (hg.ENABLE, hg.POWER_ON, hg.RECEIVE):
            found = ask(step, actor, **drained)
            assert found.kind == hg.REFUSE and "drained by plan p9" in found.why
    assert ask(hg.ENABLE, hg.UNDRAIN, **drained).go
    assert ask(hg.POWER_ON, hg.UNDRAIN, **drained).go
    assert ask(hg.POWER_ON, hg.OPERATOR, **drained).go          # powered on, not enabled
    assert not ask(hg.ENABLE, hg.OPERATOR, **drained).go


@pytest.mark.parametrize("actor", sorted(hg.PLAN_ACTORS | {hg.OPERATOR, hg.UNDRAIN}))
def test_a_drained_host_is_powered_off_only_by_a_drain_or_the_operator(actor: str) -> None:
    """A plan made before the drain (issue 45's long run) leaves the drained host on: only
    a drain with --power-off, or the operator's own power command, powers it off."""
    for drained in ({"status": "disabled", "disabled_reason": drain_reason("p9")},
                    {"status": "disabled", "disabled_reason": drain_reason("p9"),
                     "recorded": hg.DRAINED}):
        found = ask(hg.POWER_OFF, actor, **drained)
        assert found.go == (actor in (hg.DRAIN, hg.OPERATOR)), (actor, found)
        if not found.go:
            assert "is drained" in found.why and "hosts power off c3" in found.why
        assert ask(hg.DISABLE, actor, **drained).go       # its reason is kept by the caller


def test_a_drain_the_operator_ended_through_nova_no_longer_holds_the_host() -> None:
    """Recorded drained, but the operator enabled its nova-compute: in service, as for Nova's
    scheduler; while it stays disabled, the recorded drain holds even without its reason."""
    for actor in (hg.ROLLBACK, hg.RELIEF, hg.APPLY):
        assert ask(hg.RECEIVE, actor, status="enabled", recorded=hg.DRAINED).go
        assert not ask(hg.RECEIVE, actor, status="disabled", disabled_reason=OURS,
                       recorded=hg.DRAINED).go


def test_a_pending_shutdown_gets_no_work_and_a_power_on_waits_for_off() -> None:
    pending = {"status": "disabled", "disabled_reason": OURS, "shutdown_pending": True,
               "power": "on"}
    for actor in (hg.ROLLBACK, hg.RELIEF, hg.OPERATOR):
        assert ask(hg.POWER_ON, actor, **pending).kind == hg.WAIT_OFF
        assert ask(hg.ENABLE, actor, **pending).kind == hg.REFUSE
        assert ask(hg.RECEIVE, actor, **pending).kind == hg.REFUSE
    assert ask(hg.POWER_ON, hg.ROLLBACK, **{**pending, "power": "off"}).go
    assert ask(hg.POWER_ON, hg.ROLLBACK, **{**pending, "power": "unknown"}).kind == hg.WAIT_OFF


def test_scope_binds_the_daemons_actors_and_exclusions_every_plan() -> None:
    west = Rules(scope=Scope("az", "west"))
    for actor in (hg.RELIEF, hg.WATCH, hg.RAMP):
        found = ask(hg.POWER_ON, actor, west)
        assert found.kind == hg.REFUSE and "outside the scope az=west" in found.why
    for actor in (hg.APPLY, hg.ROLLBACK, hg.OPERATOR, hg.UNDRAIN):
        assert ask(hg.POWER_ON, actor, west).go
    excluded = Rules(excluded_hosts=("c*",))
    for actor in hg.PLAN_ACTORS:
        assert "excluded by config" in ask(hg.RECEIVE, actor, excluded).why
    assert ask(hg.POWER_ON, hg.OPERATOR, excluded).go


def test_pinned_instances_and_excluded_projects_move_in_no_plan() -> None:
    pinned = hg.InstanceFacts("vm", {"consolidator:exclude": "true"})
    kept = hg.InstanceFacts("vm2", {}, "p-kept")
    rules = Rules(excluded_projects=frozenset({"p-kept"}))
    for actor in hg.PLAN_ACTORS:
        assert "pinned" in ask(hg.MIGRATE, actor, rules, pinned).why
        assert "excluded" in ask(hg.MIGRATE, actor, rules, kept).why
        assert ask(hg.MIGRATE, actor, rules, hg.InstanceFacts("vm3")).go


def test_a_rescue_is_never_refused_and_an_off_host_gets_no_work() -> None:
    worst = {"status": "disabled", "disabled_reason": "RMA", "shutdown_pending": True,
             "power": "off"}
    for step in hg.STEPS:
        assert ask(step, hg.RESCUE, Rules(excluded_hosts=("c3",)), **worst).go
    assert "reads off" in ask(hg.RECEIVE, hg.APPLY, power="off").why
    assert ask(hg.POWER_ON, hg.APPLY, power="off").go
