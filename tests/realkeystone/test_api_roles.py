"""The API's every endpoint with every role against the real Keystone: real tokens, real
role assignments (implied roles included) and real expiry, validated by keystonemiddleware
with the service user an operator creates."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime, timezone

import pytest

from consolidator.app.snapshots import record_snapshot
from tests.functional.api_world import ApiWorld, api_world
from tests.functional.test_api_roles import CASES, IDS, Case, ask, check_role
from tests.functional.waits import wait_until
from tests.realkeystone.served import RealKeystone

pytestmark = pytest.mark.filterwarnings("ignore:::openstack.*", "ignore:::keystonemiddleware.*",
                                        "ignore:::oslo_config.*", "ignore:::oslo_policy.*",
                                        "ignore:::webob.*")


@pytest.fixture(scope="module")
def world(real_keystone: RealKeystone,
          tmp_path_factory: pytest.TempPathFactory) -> Iterator[ApiWorld]:
    def expired() -> str:
        token, expires = real_keystone.expiring_token("admin", 20)
        wait_until(lambda: datetime.now(timezone.utc) > expires, "the token expires")
        time.sleep(0.1)     # past Keystone's clock too (the same host's)
        return token

    with pytest.MonkeyPatch.context() as patch, \
            api_world(tmp_path_factory.mktemp("realroles"), patch,
                      service_auth=real_keystone.auth_token_options()) as running:
        running.issue = lambda persona: real_keystone.token(persona or "admin")
        running.expire = expired
        running.snapshot_id = record_snapshot(running.ctx)[0].info.id   # type: ignore
        yield running


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("persona", ["reader", "operator", "admin"])
def test_each_role_is_refused_below_the_rule_and_served_at_it(world: ApiWorld, case: Case,
                                                              persona: str) -> None:
    check_role(world, case, persona)


def test_no_token_and_an_expired_token_are_401(world: ApiWorld) -> None:
    for case in CASES:
        path, body, headers = ask(world, case)
        answer = world.call(case.method, path, persona=None, body=body, headers=headers)
        assert answer.status_code == 401, (case.name, answer.get_data(as_text=True))
    expired = world.expired_token()
    for case in CASES:
        path, body, headers = ask(world, case)
        answer = world.call(case.method, path, token=expired, body=body, headers=headers)
        assert answer.status_code == 401, (case.name, answer.get_data(as_text=True))


def test_the_journal_names_the_real_keystone_user(world: ApiWorld,
                                                  real_keystone: RealKeystone) -> None:
    answer = world.call("POST", "/v1/snapshots", persona="operator", body={})
    assert answer.status_code == 202
    rows = world.call("GET", "/v1/journal?action=api_request", persona="reader").get_json()
    actor = rows["journal"][0]["params"]["actor"]
    assert actor["user_id"] == real_keystone.user_ids["operator"]
    assert actor["project_id"] == real_keystone.project_id
    assert set(actor["roles"]) == {"member", "reader"}
    assert actor["request_id"] == answer.headers["x-openstack-request-id"]
