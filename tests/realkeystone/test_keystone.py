"""The real Keystone as consolidator's API will meet it: each user's token carries its
roles (implied ones included), keystonemiddleware refuses an expired token, the catalog
lists the consolidation service, and the openstack client logs in."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import requests

from consolidator.emulators.fake.keystone import IMPLIED_ROLES, PERSONAS
from tests.functional import auth_echo
from tests.realkeystone.served import RealKeystone

pytestmark = pytest.mark.filterwarnings("ignore:::openstack.*",
                                        "ignore:::keystonemiddleware.*",
                                        "ignore:::oslo_config.*")

#: What Keystone's bootstrap makes of each persona's role (admin -> manager -> member ->
#: reader): the roles its token must carry.
EXPECTED = {"reader": {"reader"}, "operator": {"member", "reader"},
            "admin": {"admin", "manager", "member", "reader"}}


def middleware(keystone: RealKeystone) -> Any:
    options = keystone.auth_token_options()
    return auth_echo.middleware(options["auth_url"], options["username"],
                                options["password"], options["project_name"])


@pytest.mark.parametrize("persona", ["reader", "operator", "admin"])
def test_each_users_token_carries_its_roles_and_the_implied_ones(
        real_keystone: RealKeystone, persona: str) -> None:
    conn = real_keystone.connect(persona)
    access = conn.session.auth.get_access(conn.session)
    assert set(access.role_names) == EXPECTED[persona]
    assert access.username == PERSONAS[persona].name
    assert access.project_id == real_keystone.project_id
    assert access.user_id == real_keystone.user_ids[persona]


def test_the_fake_keystone_gives_the_same_roles(real_keystone: RealKeystone) -> None:
    """The fake cloud's Keystone implies roles as the real one does, persona by persona."""
    for persona, user in PERSONAS.items():
        conn = real_keystone.connect(persona)
        real = set(conn.session.auth.get_access(conn.session).role_names)
        assert set(IMPLIED_ROLES[user.role]) == real, persona


def test_auth_token_passes_each_user_with_its_roles_and_refuses_the_others(
        real_keystone: RealKeystone) -> None:
    app = middleware(real_keystone)
    for persona, roles in EXPECTED.items():
        resp = auth_echo.call(app, real_keystone.token(persona))
        assert resp.status_int == 200, resp.text
        seen = resp.json
        assert seen["HTTP_X_IDENTITY_STATUS"] == "Confirmed"
        assert set(seen["HTTP_X_ROLES"].split(",")) == roles
        assert seen["HTTP_X_USER_ID"] == real_keystone.user_ids[persona]
        assert seen["HTTP_X_PROJECT_ID"] == real_keystone.project_id
    missing = auth_echo.call(app, None)
    assert missing.status_int == 401
    assert real_keystone.auth_url in missing.headers["WWW-Authenticate"]
    assert auth_echo.call(app, "gAAAAAB-not-a-token").status_int == 401


def test_an_expired_token_is_refused_by_keystone_and_by_auth_token(
        real_keystone: RealKeystone) -> None:
    app = middleware(real_keystone)
    assert auth_echo.call(app, real_keystone.token("admin")).status_int == 200  # warm
    for lifetime in (15, 60, 240, 960):
        cached, cached_expiry = real_keystone.expiring_token("operator", lifetime)
        seen = auth_echo.call(app, cached)               # valid, and now cached
        if seen.status_int == 200 or datetime.now(timezone.utc) < cached_expiry:
            break
        # A loaded machine took longer than the lifetime to issue and check the token: it
        # expired on its way, which says nothing of the middleware. Again, with a longer one.
    assert seen.status_int == 200, (seen.text, real_keystone.log_file.read_text()[-3000:])
    assert set(seen.json["HTTP_X_ROLES"].split(",")) == EXPECTED["operator"]
    fresh, fresh_expiry = real_keystone.expiring_token("reader", 15)
    time.sleep(max(0.0, (max(cached_expiry, fresh_expiry)
                         - datetime.now(timezone.utc)).total_seconds()) + 1.0)
    assert auth_echo.call(app, cached).status_int == 401     # expired in the cache too
    assert auth_echo.call(app, fresh).status_int == 401      # Keystone says it is gone
    gone = requests.get(f"{real_keystone.auth_url}/auth/tokens", timeout=30,
                        headers={"X-Auth-Token": real_keystone.token("service"),
                                 "X-Subject-Token": fresh})
    assert gone.status_code == 404, gone.text


def test_the_catalog_lists_the_consolidation_service(real_keystone: RealKeystone) -> None:
    conn = real_keystone.connect("reader")
    catalog = conn.session.auth.get_access(conn.session).service_catalog
    entries = catalog.get_endpoints(service_type="consolidation")["consolidation"]
    assert {(e["interface"], e["url"]) for e in entries} == {
        (i, real_keystone.api_url) for i in ("public", "internal", "admin")}
    assert catalog.get_endpoints(service_name="consolidator")
    assert conn.session.get_endpoint(service_type="consolidation",
                                     interface="public") == real_keystone.api_url


def test_the_tokens_last_the_configured_lifetime(real_keystone: RealKeystone) -> None:
    conn = real_keystone.connect("reader")
    access = conn.session.auth.get_access(conn.session)
    lifetime = (access.expires - access.issued).total_seconds()
    assert abs(lifetime - 3600) < 2


def test_openstack_token_issue_as_ks_admin(real_keystone: RealKeystone) -> None:
    exe = Path(sys.executable).with_name("openstack")
    done = subprocess.run(
        [str(exe), "--os-cloud", "ks-admin", "token", "issue", "-f", "json"],
        capture_output=True, text=True, timeout=180,
        env={"OS_CLIENT_CONFIG_FILE": str(real_keystone.clouds_yaml), "PATH": str(exe.parent),
             "HOME": str(real_keystone.clouds_yaml.parent)})
    assert done.returncode == 0, done.stderr
    issued = json.loads(done.stdout)
    assert issued["user_id"] == real_keystone.user_ids["admin"]
    assert issued["project_id"] == real_keystone.project_id
    assert issued["id"].startswith("gAAAAA")        # a fernet token
