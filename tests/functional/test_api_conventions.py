"""OpenStack's API conventions, bad input and secrets, through the real stack against the
fake Keystone: versions without a token, microversions, request ids, paging links, ETags,
API-SIG errors that name the field, nothing stored on a refusal, and no secret answered or
logged."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import func, select

from consolidator.app.planning import PlanRequest, make_plan
from consolidator.app.snapshots import get_snapshot, record_snapshot
from consolidator.store.tables import jobs, journal, plans
from tests.functional.api_world import ApiWorld, api_world

pytestmark = pytest.mark.filterwarnings("ignore:::openstack.*", "ignore:::keystonemiddleware.*",
                                        "ignore:::oslo_config.*", "ignore:::oslo_policy.*",
                                        "ignore:::webob.*")
SECRET = "webhook-secret-7f3a"


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiWorld]:
    with pytest.MonkeyPatch.context() as patch, \
            api_world(tmp_path_factory.mktemp("conventions"), patch,
                      notify={"secret": SECRET}, api={"max_body_bytes": 2000}) as running:
        snap = record_snapshot(running.ctx)[0]
        running.snapshot_id = snap.info.id   # type: ignore[attr-defined]
        yield running


def new_plan(world: ApiWorld) -> str:
    snap = get_snapshot(world.ctx, world.snapshot_id)   # type: ignore[attr-defined]
    return make_plan(world.ctx, snap, PlanRequest(algorithm="firstfit")).id


def stored_rows(world: ApiWorld) -> dict[str, int]:
    """How many jobs, plans and journal rows the database holds."""
    with world.ctx.engine().connect() as conn:
        return {t.name: conn.execute(select(func.count()).select_from(t)).scalar_one()
                for t in (jobs, plans, journal)}


def test_the_versions_need_no_token_and_give_the_range(world: ApiWorld) -> None:
    answer = world.call("GET", "/", persona=None)
    assert answer.status_code == 200
    version = answer.get_json()["versions"][0]
    assert (version["min_version"], version["max_version"]) == ("1.0", "1.0")
    assert version["links"][0]["href"].endswith("/v1/")
    assert answer.headers["x-openstack-request-id"].startswith("req-")


@pytest.mark.parametrize("header, status", [
    ("consolidation 1.0", 200), ("consolidation latest", 200), ("compute 2.1", 200),
    ("consolidation 1.1", 406), ("consolidation 2.0", 406), ("consolidation one", 400),
    ("consolidation 1." + "9" * 5000, 406), ("consolidation \u0661.\u0660", 400)])
def test_microversions(world: ApiWorld, header: str, status: int) -> None:
    answer = world.call("GET", "/v1/hosts", headers={"OpenStack-API-Version": header})
    assert answer.status_code == status, answer.get_data(as_text=True)
    if status == 406:
        detail = answer.get_json()["errors"][0]["detail"]
        assert "1.0 to 1.0" in detail and len(detail) < 200
    if status == 200:
        assert answer.headers["OpenStack-API-Version"] == "consolidation 1.0"


def test_hosts_show_their_usage_from_the_newest_snapshot(world: ApiWorld) -> None:
    """Each host's vCPUs and memory in use (its instances' Placement claims) and its
    Placement capacity, as the newest snapshot recorded them: every instance holds 2 vCPUs
    and 2048 MB, 10 of them on 4 hosts of 16 vCPUs and 32768 MB."""
    hosts = world.call("GET", "/v1/hosts").get_json()["hosts"]
    for h in hosts:
        assert (h["vcpus_used"], h["memory_mb_used"]) == (2 * h["instances"],
                                                          2048 * h["instances"]), h
        assert (h["vcpus_capacity"], h["memory_mb_capacity"]) == (16, 32768), h
    assert sum(h["vcpus_used"] for h in hosts) == 20
    one = world.call("GET", f"/v1/hosts/{hosts[0]['name']}").get_json()["host"]
    assert one["vcpus_used"] == hosts[0]["vcpus_used"]
    shown = world.call("GET", f"/v1/snapshots/{hosts[0]['snapshot_id']}").get_json()
    assert [h["vcpus_used"] for h in shown["snapshot"]["hosts"]] == [
        h["vcpus_used"] for h in hosts]


def test_hosts_show_the_state_recorded_under_the_clouds_identity(world: ApiWorld) -> None:
    """The gate records host states under the cloud's identity (the snapshot's endpoint),
    not its clouds.yaml name: the API reads them there."""
    from consolidator.store import host_states

    listed = world.call("GET", "/v1/hosts/c4").get_json()["host"]
    identity = get_snapshot(world.ctx, listed["snapshot_id"]).info.endpoint
    assert identity and identity != "fake"
    engine = world.ctx.engine()
    host_states.change(engine, identity, "c4", "held by the operator", actor="test")
    try:
        shown = world.call("GET", "/v1/hosts/c4").get_json()["host"]
        assert shown["recorded_state"] == "held by the operator"
    finally:
        host_states.change(engine, identity, "c4", "in service", actor="test")


@pytest.mark.parametrize("method, path, persona", [
    ("GET", "/v1/plans", "reader"), ("GET", "/v1/plans", None), ("GET", "/v1/nothing", "admin"),
    ("DELETE", "/v1/plans", "admin"), ("GET", "/v1/plans/no-such-plan", "admin")])
def test_every_answer_has_a_request_id_and_errors_are_api_sig(world: ApiWorld, method: str,
                                                              path: str,
                                                              persona: str | None) -> None:
    answer = world.call(method, path, persona=persona)
    request_id = answer.headers["x-openstack-request-id"]
    assert request_id.startswith("req-")
    if answer.status_code >= 400:
        error = answer.get_json()["errors"][0]
        assert set(error) >= {"status", "code", "title", "detail", "request_id"}
        assert error["request_id"] == request_id
        assert error["status"] == str(answer.status_code)


def test_lists_page_with_limit_marker_and_next_links(world: ApiWorld) -> None:
    made = {new_plan(world) for _ in range(3)}
    seen: list[str] = []
    path = "/v1/plans?limit=2"
    while path:
        page = world.call("GET", path.split("localhost", 1)[-1]).get_json()
        assert len(page["plans"]) <= 2
        seen += [p["id"] for p in page["plans"]]
        links = page["plans_links"]
        path = links[0]["href"] if links else ""
    assert made <= set(seen) and len(seen) == len(set(seen))
    created = world.call("GET", "/v1/plans?limit=1").get_json()["plans"][0]["created_at"]
    assert created.endswith("Z") and "T" in created     # ISO 8601, UTC


def test_a_state_change_needs_the_plans_etag(world: ApiWorld) -> None:
    plan = new_plan(world)
    path = f"/v1/plans/{plan}/approve"
    tag = world.call("GET", f"/v1/plans/{plan}").headers["ETag"]
    missing = world.call("POST", path, persona="operator")
    assert missing.status_code == 428
    assert world.call("POST", path, persona="operator",
                      headers={"If-Match": '"stale"'}).status_code == 412
    done = world.call("POST", path, persona="operator", headers={"If-Match": tag})
    assert done.status_code == 200 and done.get_json()["plan"]["status"] == "approved"
    assert done.headers["ETag"] != tag
    # a second operator who read the plan before the approval cannot cancel it blindly
    late = world.call("POST", f"/v1/plans/{plan}/cancel", persona="operator",
                      headers={"If-Match": tag})
    assert late.status_code == 412
    assert world.call("GET", f"/v1/plans/{plan}").get_json()["plan"]["status"] == "approved"


#: Bad input: (what, method, path, body or raw bytes, headers, status, the field named).
BAD = [
    ("malformed JSON", "POST", "/v1/plans", b'{"algorithm": ', {}, 400, None),
    ("not an object", "POST", "/v1/plans", b'["firstfit"]', {}, 400, None),
    ("nested deeper than the parser goes", "POST", "/v1/plans", b"[" * 995 + b"]" * 995, {},
     400, None),
    ("a field nested deep", "POST", "/v1/plans",
     b'{"options": {"a": ' + b"[" * 960 + b"]" * 960 + b"}}", {}, 400, None),
    ("wrong type", "POST", "/v1/plans", {"algorithm": 5}, {}, 400, "algorithm"),
    ("bool for a number", "POST", "/v1/plans", {"max_migrations": True}, {}, 400,
     "max_migrations"),
    ("negative budget", "POST", "/v1/plans", {"max_migrations": -1}, {}, 400,
     "max_migrations"),
    ("NaN", "POST", "/v1/plans", b'{"confidence": NaN}', {}, 400, "confidence"),
    ("unknown field", "POST", "/v1/plans", {"algorithm": "firstfit", "colour": "red"}, {},
     400, "colour"),
    ("unknown algorithm", "POST", "/v1/plans", {"algorithm": "best"}, {}, 400, None),
    ("an option's list of the wrong type", "POST", "/v1/plans",
     {"algorithm": "hvp", "options": {"strategies": {"ff": 1}}}, {}, 400, None),
    ("an option's list nested", "POST", "/v1/plans",
     {"algorithm": "hvp", "options": {"strategies": [["ff"]]}}, {}, 400, None),
    ("an unknown heuristic", "POST", "/v1/plans",
     {"algorithm": "hvp", "options": {"strategies": "zz"}}, {}, 400, None),
    ("unknown snapshot", "POST", "/v1/plans", {"snapshot_id": "nope"}, {}, 400,
     "snapshot_id"),
    ("front with a budget", "POST", "/v1/plans", {"front": True, "max_migrations": 3}, {},
     400, "front"),
    ("body over the limit", "POST", "/v1/plans", {"scope": "x" * 3000}, {}, 413, None),
    ("not JSON", "POST", "/v1/plans", b"algorithm=firstfit",
     {"Content-Type": "application/x-www-form-urlencoded"}, 415, None),
    ("missing field", "POST", "/v1/rollbacks", {}, {}, 400, "snapshot_id"),
    ("unknown rollback snapshot", "POST", "/v1/rollbacks", {"snapshot_id": "nope"}, {}, 400,
     "snapshot_id"),
    ("power action", "POST", "/v1/hosts/c1/power", {"action": "reboot"}, {}, 400, "action"),
    ("unknown host", "POST", "/v1/hosts/c9/drain", {}, {}, 404, None),
    ("unknown plan", "POST", "/v1/plans/nope/approve", {}, {"If-Match": "*"}, 404, None),
    ("unknown job", "GET", "/v1/jobs/nope", None, {}, 404, None),
    ("bad limit", "GET", "/v1/plans?limit=0", None, {}, 400, "limit"),
    ("bad marker", "GET", "/v1/plans?marker=nope", None, {}, 400, "marker"),
    ("unknown query", "GET", "/v1/hosts?colour=red", None, {}, 400, "colour"),
    ("bad status", "GET", "/v1/plans?status=done", None, {}, 400, "status"),
    ("bad since", "GET", "/v1/journal?since=yesterday", None, {}, 400, "since"),
    ("since out of UTC's range", "GET", "/v1/journal?since=0001-01-01T00:00:00%2B01:00", None,
     {}, 400, "since"),
    ("since beyond year 9999", "GET", "/v1/journal?since=9999-12-31T23:59:59-01:00", None, {},
     400, "since"),
    ("limit in other digits", "GET", "/v1/plans?limit=\u00b2", None, {}, 400, "limit"),
    ("days in other digits", "GET", "/v1/report?days=\u00b2", None, {}, 400, "days"),
    ("days beyond any number", "GET", "/v1/report?days=" + "9" * 5000, None, {}, 400, "days"),
]


@pytest.mark.parametrize("what, method, path, body, headers, status, field", BAD,
                         ids=[b[0] for b in BAD])
def test_bad_input_gets_a_4xx_naming_the_field_and_stores_nothing(
        world: ApiWorld, what: str, method: str, path: str, body: Any,
        headers: dict[str, str], status: int, field: str | None) -> None:
    before = stored_rows(world)
    raw = body if isinstance(body, bytes) else None
    answer = world.call(method, path, body=None if raw else body, raw=raw, headers=headers)
    assert answer.status_code == status, answer.get_data(as_text=True)
    error = answer.get_json()["errors"][0]
    if field is not None:
        assert error["detail"].startswith(f"{field}:"), error
        assert error["source"]["pointer"] == f"/{field}"
    assert stored_rows(world) == before


def test_a_limit_beyond_any_number_is_the_largest_page(world: ApiWorld) -> None:
    new_plan(world)
    answer = world.call("GET", "/v1/plans?limit=" + "9" * 5000)
    assert answer.status_code == 200, answer.get_data(as_text=True)
    assert answer.get_json()["plans"]


def test_no_answer_or_log_holds_a_secret(world: ApiWorld,
                                         caplog: pytest.LogCaptureFixture) -> None:
    """The token, the database URL, the webhook secret and the BMC passwords never leave."""
    caplog.set_level(logging.DEBUG)
    token = world.token("admin")
    plan = new_plan(world)
    answers = [world.call("GET", p) for p in (
        "/v1/snapshots", f"/v1/snapshots/{world.snapshot_id}", "/v1/plans",  # type: ignore
        f"/v1/plans/{plan}", "/v1/hosts", "/v1/hosts/c1", "/v1/journal", "/v1/jobs",
        "/v1/rollbacks", "/v1/report")]
    answers.append(world.call("POST", "/v1/snapshots", body={}))
    answers.append(world.call("GET", "/v1/plans", token=token + "x"))
    answers.append(world.call("GET", "/v1/plans", token=world.expired_token()))
    said = "\n".join(a.get_data(as_text=True) + json.dumps(dict(a.headers)) for a in answers)
    said += "\n".join(r.getMessage() for r in caplog.records)
    db_url = str(world.ctx.database_url)
    for secret in (token, db_url, str(world.tmp / "api.db"), SECRET, "cloud-admin-secret",
                   "secret\""):
        assert secret not in said, secret


@pytest.mark.parametrize("method,path,body", [
    ("GET", "/v1/jobs/" + "a" * 5000, None),
    ("GET", "/v1/plans/" + "b" * 5000, None),
    ("GET", "/v1/hosts/" + "c" * 5000, None),
    ("POST", "/v1/plans", {"spare": int("9" * 1900)}),
])
def test_an_error_names_a_long_value_by_its_start(world: ApiWorld, method: str, path: str,
                                                   body: dict | None) -> None:
    """An unknown id of 5,000 characters, or a number of 1,900 digits, was echoed whole in
    the error's detail: it is named by its start."""
    answer = world.call(method, path, body=body)
    assert answer.status_code in (400, 404), answer.get_data(as_text=True)
    detail = answer.get_json()["errors"][0]["detail"]
    assert len(detail) < 400, detail
