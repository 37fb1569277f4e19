"""Every endpoint with every role, through the real stack against the fake Keystone: no
token 401, an expired token 401, a role below the rule's 403, the rule's role and above
succeed; a policy file that changes a rule is honoured."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from consolidator.app.planning import PlanRequest, make_plan
from consolidator.app.review import change_status
from consolidator.app.snapshots import record_snapshot
from tests.functional.api_world import ApiWorld, api_world

pytestmark = pytest.mark.filterwarnings("ignore:::openstack.*", "ignore:::keystonemiddleware.*",
                                        "ignore:::oslo_config.*", "ignore:::oslo_policy.*")

RANK = {"reader": 0, "operator": 1, "admin": 2}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiWorld]:
    with pytest.MonkeyPatch.context() as patch, \
            api_world(tmp_path_factory.mktemp("roles"), patch) as running:
        running.snapshot_id = record_snapshot(running.ctx)[0].info.id   # type: ignore[attr-defined]
        yield running


def fresh_plan(world: ApiWorld, *, approved: bool = False) -> str:
    """A new proposed (or approved) plan of the world's snapshot."""
    from consolidator.app.snapshots import get_snapshot

    snap = get_snapshot(world.ctx, world.snapshot_id)   # type: ignore[attr-defined]
    plan = make_plan(world.ctx, snap, PlanRequest(algorithm="firstfit"))
    if approved:
        change_status(world.ctx, plan.id, "approved")
    return plan.id


def etag_of(world: ApiWorld, plan_id: str) -> str:
    return world.call("GET", f"/v1/plans/{plan_id}").headers["ETag"]


@dataclass(frozen=True)
class Case:
    """One endpoint: its least persona, and how to ask it (path, body, headers)."""

    name: str
    method: str
    least: str
    ask: Callable[[ApiWorld], tuple[str, Any, dict[str, str]]]
    success: int = 200


def _plan_action(action: str, *, approved: bool = False, tagged: bool = True
                 ) -> Callable[[ApiWorld], tuple[str, Any, dict[str, str]]]:
    def ask(world: ApiWorld) -> tuple[str, Any, dict[str, str]]:
        plan = fresh_plan(world, approved=approved)
        headers = {"If-Match": etag_of(world, plan)} if tagged else {}
        return f"/v1/plans/{plan}/{action}", {}, headers
    return ask


def _job_path(world: ApiWorld) -> tuple[str, Any, dict[str, str]]:
    job = world.call("POST", "/v1/snapshots", body={}).get_json()["job"]["id"]
    return f"/v1/jobs/{job}", None, {}


def _fixed(path: str, body: Any = None) -> Callable[[ApiWorld], tuple[str, Any, dict]]:
    return lambda world: (path.format(snap=getattr(world, "snapshot_id", "")), body, {})


CASES = [
    Case("list snapshots", "GET", "reader", _fixed("/v1/snapshots")),
    Case("show snapshot", "GET", "reader", _fixed("/v1/snapshots/{snap}")),
    Case("list plans", "GET", "reader", _fixed("/v1/plans")),
    Case("show plan", "GET", "reader", lambda w: (f"/v1/plans/{fresh_plan(w)}", None, {})),
    Case("list hosts", "GET", "reader", _fixed("/v1/hosts")),
    Case("show host", "GET", "reader", _fixed("/v1/hosts/c1")),
    Case("list rollbacks", "GET", "reader", _fixed("/v1/rollbacks")),
    Case("journal", "GET", "reader", _fixed("/v1/journal")),
    Case("report", "GET", "reader", _fixed("/v1/report")),
    Case("list jobs", "GET", "reader", _fixed("/v1/jobs")),
    Case("show job", "GET", "reader", _job_path),
    Case("snapshot", "POST", "operator", _fixed("/v1/snapshots", {}), 202),
    Case("plan", "POST", "operator",
         _fixed("/v1/plans", None), 202),
    Case("approve", "POST", "operator", _plan_action("approve")),
    Case("cancel", "POST", "operator", _plan_action("cancel")),
    Case("dry-run", "POST", "operator", _plan_action("dry-run", tagged=False), 202),
    Case("apply", "POST", "admin", _plan_action("apply", approved=True), 202),
    Case("rollback", "POST", "admin", lambda w: ("/v1/rollbacks",
                                                 {"snapshot_id": w.snapshot_id}, {}), 202),
    Case("drain", "POST", "admin", _fixed("/v1/hosts/c1/drain", {"power_off": False}), 202),
    Case("undrain", "POST", "admin", _fixed("/v1/hosts/c1/undrain", {}), 202),
    Case("power", "POST", "admin", _fixed("/v1/hosts/c2/power", {"action": "on"}), 202),
]
IDS = [c.name for c in CASES]


def ask(world: ApiWorld, case: Case) -> tuple[str, Any, dict[str, str]]:
    path, body, headers = case.ask(world)
    if case.name == "plan":
        body = {"snapshot_id": world.snapshot_id, "algorithm": "firstfit"}   # type: ignore
    return path, body, headers


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_no_token_is_401(world: ApiWorld, case: Case) -> None:
    path, body, headers = ask(world, case)
    answer = world.call(case.method, path, persona=None, body=body, headers=headers)
    assert answer.status_code == 401, answer.get_data(as_text=True)
    error = answer.get_json()["errors"][0]
    assert error["status"] == "401" and error["request_id"].startswith("req-")
    assert answer.headers["WWW-Authenticate"].startswith("Keystone uri=")


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_expired_token_is_401(world: ApiWorld, case: Case) -> None:
    path, body, headers = ask(world, case)
    answer = world.call(case.method, path, token=world.expired_token(), body=body,
                        headers=headers)
    assert answer.status_code == 401, answer.get_data(as_text=True)


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("persona", ["reader", "operator", "admin"])
def test_each_role_is_refused_below_the_rule_and_served_at_it(world: ApiWorld, case: Case,
                                                              persona: str) -> None:
    check_role(world, case, persona)


def check_role(world: ApiWorld, case: Case, persona: str) -> None:
    """The persona is served at and above the rule's role, refused (403) below it."""
    path, body, headers = ask(world, case)
    answer = world.call(case.method, path, persona=persona, body=body, headers=headers)
    if RANK[persona] >= RANK[case.least]:
        assert answer.status_code == case.success, answer.get_data(as_text=True)
    else:
        assert answer.status_code == 403, answer.get_data(as_text=True)
        assert answer.get_json()["errors"][0]["code"] == "consolidation.forbidden"


@pytest.mark.parametrize("case", [c for c in CASES if c.least == "reader"],
                         ids=[c.name for c in CASES if c.least == "reader"])
def test_a_token_without_a_project_role_is_403_even_to_read(world: ApiWorld,
                                                            case: Case) -> None:
    path, body, headers = ask(world, case)
    answer = world.call(case.method, path, token=world.raw_token(scoped=False), body=body,
                        headers=headers)
    assert answer.status_code == 403, answer.get_data(as_text=True)


def test_a_policy_file_that_changes_a_rule_is_honoured(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The policy file lets readers make snapshots, and keeps plans from them."""
    policy = tmp_path / "policy.yaml"
    policy.write_text('"consolidation:snapshot:create": "role:reader"\n'
                      '"consolidation:plan:list": "role:admin"\n')
    with api_world(tmp_path, monkeypatch, oslo_policy={"policy_file": policy}) as world:
        assert world.call("POST", "/v1/snapshots", persona="reader", body={}
                          ).status_code == 202
        assert world.call("GET", "/v1/plans", persona="operator").status_code == 403
        assert world.call("GET", "/v1/plans", persona="admin").status_code == 200
        # the rules the file does not name keep their defaults
        assert world.call("POST", "/v1/hosts/c1/undrain", persona="operator",
                          body={}).status_code == 403
