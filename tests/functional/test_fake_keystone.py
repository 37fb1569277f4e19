"""The fake cloud's Keystone as keystonemiddleware's auth_token and openstacksdk see it:
token validation, roles with their implied roles, the personas, expiry and the catalog."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
import requests

from consolidator.emulators.fake.cloud import FakeCloud
from consolidator.scenario.files import parse_scenario
from tests.functional import auth_echo
from tests.functional.auth_echo import call

pytestmark = pytest.mark.filterwarnings("ignore:::openstack.*",
                                        "ignore:::keystonemiddleware.*",
                                        "ignore:::oslo_config.*")

DOC = {"name": "keystone", "hosts": [{"name": "c1", "vcpus": 8, "memory_mb": 16384,
                                      "disk_gb": 100}],
       "instances": [{"name": "vm-1", "host": "c1", "vcpus": 1, "memory_mb": 512,
                      "disk_gb": 1}]}
#: What each clouds.yaml persona's token carries: the role assigned and those it implies.
ROLES = {"reader": {"reader"}, "operator": {"member", "reader"},
         "admin": {"admin", "manager", "member", "reader"}}


def make_cloud(**kwargs: Any) -> FakeCloud:
    return FakeCloud(parse_scenario(DOC), **kwargs)


@pytest.fixture
def cloud() -> Iterator[FakeCloud]:
    with make_cloud() as running:
        yield running


def middleware(cloud: FakeCloud) -> Any:
    """auth_token with the cloud's admin user as its service credentials."""
    return auth_echo.middleware(cloud.auth_url, "admin", "secret", "admin")


def token_of(cloud: FakeCloud, persona: str | None) -> str:
    return str(cloud.connect(persona).auth_token)


def validate(cloud: FakeCloud, caller: str, subject: str, method: str = "GET",
             query: str = "") -> requests.Response:
    return requests.request(method, f"{cloud.auth_url}/auth/tokens{query}", timeout=10,
                            headers={"X-Auth-Token": caller, "X-Subject-Token": subject})


@pytest.mark.parametrize("persona", ["reader", "operator", "admin"])
def test_each_persona_gets_a_token_with_its_roles_and_those_implied(
        cloud: FakeCloud, persona: str) -> None:
    conn = cloud.connect(persona)
    access = conn.session.auth.get_access(conn.session)
    assert set(access.role_names) == ROLES[persona]
    assert access.project_name == "admin"
    assert access.username == {"admin": "cloud-admin"}.get(persona, persona)
    assert access.user_id != cloud.keystone.user_id       # not the cloud's admin user


def test_the_cloud_admin_user_is_admin_as_before(cloud: FakeCloud) -> None:
    conn = cloud.connect()
    access = conn.session.auth.get_access(conn.session)
    assert (access.username, set(access.role_names)) == ("admin", ROLES["admin"])
    assert list(conn.compute.servers(all_projects=True))


def test_auth_token_passes_each_persona_with_its_roles(cloud: FakeCloud) -> None:
    app = middleware(cloud)
    for persona, roles in ROLES.items():
        resp = call(app, token_of(cloud, persona))
        assert resp.status_int == 200, resp.text
        seen = resp.json
        assert seen["HTTP_X_IDENTITY_STATUS"] == "Confirmed"
        assert set(seen["HTTP_X_ROLES"].split(",")) == roles
        assert seen["HTTP_X_PROJECT_ID"] == cloud.keystone.project_id
        assert seen["HTTP_X_USER_NAME"] == {"admin": "cloud-admin"}.get(persona, persona)
        assert {s["type"] for s in json.loads(seen["HTTP_X_SERVICE_CATALOG"])} >= {"compute"}


def test_auth_token_refuses_no_token_a_bogus_one_and_a_revoked_one(cloud: FakeCloud) -> None:
    app = middleware(cloud)
    missing = call(app, None)
    assert missing.status_int == 401
    assert cloud.auth_url in missing.headers["WWW-Authenticate"]
    assert call(app, "bogus").status_int == 401
    reader = cloud.connect("reader").auth_token
    admin = token_of(cloud, None)
    assert validate(cloud, admin, reader).status_code == 200
    assert requests.delete(f"{cloud.auth_url}/auth/tokens", timeout=10, headers={
        "X-Auth-Token": admin, "X-Subject-Token": reader}).status_code == 204
    assert call(app, reader).status_int == 401     # never validated before: Keystone asked


def test_an_expired_token_is_refused_by_keystone_and_by_auth_token() -> None:
    with make_cloud(token_lifetime_s=2.0) as cloud:
        app = middleware(cloud)
        operator = token_of(cloud, "operator")
        before = call(app, operator)                    # validated and cached while fresh
        assert before.status_int == 200, before.text
        late = token_of(cloud, "reader")                # never seen by auth_token
        time.sleep(2.2)
        assert call(app, operator).status_int == 401     # the cached one has expired too
        assert call(app, late).status_int == 401
        admin = token_of(cloud, None)
        gone = validate(cloud, admin, late)
        assert gone.status_code == 404
        assert gone.json()["error"]["message"] == f"Could not find token: {late}."
        assert validate(cloud, admin, late, query="?allow_expired=1").status_code == 200


def test_validation_answers_as_keystone(cloud: FakeCloud) -> None:
    reader, other, admin = (token_of(cloud, p) for p in ("reader", "operator", None))
    own = validate(cloud, reader, reader)
    assert own.status_code == 200 and own.headers["X-Subject-Token"] == reader
    body = own.json()["token"]
    assert body["user"]["name"] == "reader" and body["project"]["name"] == "admin"
    assert [r["name"] for r in body["roles"]] == ["reader"]
    assert body["expires_at"] > body["issued_at"] and body["catalog"]
    assert validate(cloud, reader, other).status_code == 403    # not its own, not admin
    assert validate(cloud, admin, other).status_code == 200
    head = validate(cloud, admin, other, method="HEAD")
    assert head.status_code == 200 and head.content == b""
    assert "catalog" not in validate(cloud, admin, other, query="?nocatalog").json()["token"]
    assert validate(cloud, admin, "nope").status_code == 404
    assert validate(cloud, "nope", other).status_code == 401


def test_roles_are_listed(cloud: FakeCloud) -> None:
    conn = cloud.connect("reader")
    assert {r.name for r in conn.identity.roles()} == {
        "admin", "manager", "member", "reader", "service"}


def test_the_catalog_lists_the_consolidation_service_once_added(cloud: FakeCloud) -> None:
    before = cloud.connect("reader")
    catalog = before.session.auth.get_access(before.session).service_catalog
    assert catalog.get_endpoints(service_type="consolidation") == {}
    cloud.add_catalog_service("consolidation", "consolidator", "http://127.0.0.1:8779")
    conn = cloud.connect("reader")
    catalog = conn.session.auth.get_access(conn.session).service_catalog
    entries = catalog.get_endpoints(service_type="consolidation")["consolidation"]
    assert {(e["interface"], e["url"]) for e in entries} == {
        (i, "http://127.0.0.1:8779") for i in ("public", "internal", "admin")}
    assert catalog.get_endpoints(service_name="consolidator")
    assert conn.session.get_endpoint(service_type="consolidation",
                                     interface="public") == "http://127.0.0.1:8779"


def test_clouds_yaml_holds_the_personas_beside_the_cloud(cloud: FakeCloud, tmp_path: Any
                                                         ) -> None:
    import openstack
    import yaml

    path = cloud.write_clouds_yaml(tmp_path / "clouds.yaml")
    clouds = yaml.safe_load(path.read_text())["clouds"]
    assert list(clouds) == ["fake", "fake-reader", "fake-operator", "fake-admin"]
    assert clouds["fake"] == cloud.cloud_config()          # as before
    for name, roles in (("fake", ROLES["admin"]), *((f"fake-{p}", r) for p, r in
                                                    ROLES.items())):
        conn = openstack.connect(load_yaml_config=False, load_envvars=False, **clouds[name])
        assert set(conn.session.auth.get_access(conn.session).role_names) == roles, name


def test_a_scenario_may_not_name_its_user_after_a_persona() -> None:
    from consolidator.core.errors import ScenarioError

    with pytest.raises(ScenarioError, match="username 'reader' is one of the fake cloud's "
                                            "persona users"):
        make_cloud(username="reader")
    with pytest.raises(ScenarioError, match="token_lifetime_s must be more than 0"):
        make_cloud(token_lifetime_s=0)


# -- fake-cloud serve --with-api -------------------------------------------------------


@pytest.fixture
def scenario_file(tmp_path: Any) -> Any:
    import yaml

    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(DOC))
    return path


def test_serve_with_api_lists_the_api_in_the_catalog_and_the_sdk_finds_it(
        scenario_file: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The catalog side of --with-api: whatever serves the API at the URL it gives is
    listed under type consolidation, and the SDK reaches it through the catalog with a
    persona's token, which auth_token validates against the fake Keystone. (The starter
    here serves the tiny echo app behind auth_token; the product wires in its API.)"""
    import threading
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    from consolidator.app import fake_cloud

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

    started: list[Any] = []

    def start_echo(cloud: FakeCloud, request: Any) -> tuple[str, Any]:
        server = make_server("127.0.0.1", request.api_port or 0, middleware(cloud),
                             handler_class=Quiet)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        started.append(cloud)
        return f"http://127.0.0.1:{server.server_port}", server.shutdown

    monkeypatch.setattr(fake_cloud, "API_STARTER", start_echo)
    stop = threading.Event()
    lines: list[str] = []
    request = fake_cloud.ServeRequest(scenario=str(scenario_file), port=None,
                                      clouds_yaml=None, cloud_name="fake", bmc=False,
                                      bmc_yaml=None, with_api=True)
    thread = threading.Thread(target=fake_cloud.serve_fake_cloud,
                              args=(request, lines.append, stop.wait), daemon=True)
    thread.start()
    try:
        for _ in range(200):
            if started and any(line.startswith("consolidation API") for line in lines):
                break
            time.sleep(0.05)
        cloud = started[0]
        url = next(line for line in lines if line.startswith("consolidation API")).split()[3]
        conn = cloud.connect("reader")
        assert conn.session.get_endpoint(service_type="consolidation",
                                         interface="public") == url
        resp = conn.session.get("/v1/hosts", endpoint_filter={
            "service_type": "consolidation", "interface": "public"})
        assert resp.status_code == 200
        assert resp.json()["HTTP_X_ROLES"] == "reader"
    finally:
        stop.set()
        thread.join(timeout=30)
    assert lines[-1] == "fake cloud stopped"


@pytest.mark.parametrize(("args", "message"), [
    (["--api-port", "9999"], "--api-port needs --with-api"),
    (["--with-api", "--backend", "nova"], "--with-api needs --backend fake"),
])
def test_serve_with_api_usage_errors(scenario_file: Any, args: list[str], message: str
                                     ) -> None:
    from tests.functional.cli import run

    result = run("fake-cloud", "serve", "--scenario", str(scenario_file), *args)
    assert result.code == 2 and message in result.err and "Traceback" not in result.err


def test_serve_with_api_refuses_a_cloud_without_keystone(tmp_path: Any) -> None:
    import yaml

    from tests.functional.cli import run

    path = tmp_path / "noauth.yaml"
    path.write_text(yaml.safe_dump({**DOC, "settings": {"noauth": True}}))
    result = run("fake-cloud", "serve", "--scenario", str(path), "--with-api")
    assert result.code == 2, result.err
    assert "--with-api needs the fake cloud's Keystone" in result.err
    assert result.out == ""                              # refused before it listened
