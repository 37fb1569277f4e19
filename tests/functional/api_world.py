"""The API on a fake cloud in this process, for the API's tests: the real WSGI stack
(request ids, keystonemiddleware's auth_token against the fake Keystone, Flask, oslo.policy)
called through werkzeug's test client, a migrated SQLite database, and a token per persona."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import requests
from werkzeug.test import Client

from consolidator.app.context import AppContext
from consolidator.emulators.fake.cloud import FakeCloud
from consolidator.scenario.files import parse_scenario
from consolidator.store.db import make_engine, upgrade
from tests.functional.waits import wait_until

#: Four hosts, two nearly empty: a plan empties them.
DOC = {"name": "api", "hosts": [
    {"name": f"c{i}", "vcpus": 16, "memory_mb": 32768, "disk_gb": 200} for i in range(1, 5)],
    "instances": [{"name": f"vm-{i}", "host": f"c{1 + i % 4}", "vcpus": 2,
                   "memory_mb": 2048, "disk_gb": 10} for i in range(10)]}
PERSONAS = ("reader", "operator", "admin")


@dataclass
class ApiWorld:
    """A fake cloud, the API over it, and what the tests ask it with."""

    cloud: FakeCloud
    ctx: AppContext
    client: Client
    tmp: Path
    tokens: dict[str, str] = field(default_factory=dict)
    #: Issues a persona's token; default: the fake cloud's Keystone.
    issue: Callable[[str | None], str] | None = None
    #: Issues a token Keystone calls expired; default: the fake cloud's Keystone.
    expire: Callable[[], str] | None = None

    def token(self, persona: str | None) -> str:
        """A token of the cloud's persona (None: the cloud's admin user), scoped to its
        project; issued once."""
        key = persona or "cloud"
        if key not in self.tokens:
            self.tokens[key] = self.issue(persona) if self.issue is not None else \
                self.cloud.connect(persona).auth_token
        return self.tokens[key]

    def raw_token(self, *, scoped: bool = True, lifetime_s: float | None = None,
                  persona: str = "admin") -> str:
        """A token issued by a bare POST: unscoped, or living lifetime_s seconds."""
        from consolidator.emulators.fake.keystone import PERSONAS as USERS

        user = USERS[persona]
        auth: dict[str, Any] = {"identity": {"methods": ["password"], "password": {"user": {
            "name": user.name, "password": user.password, "domain": {"id": "default"}}}}}
        if scoped:
            auth["scope"] = {"project": {"name": self.cloud.settings["project"],
                                         "domain": {"id": "default"}}}
        keystone = self.cloud.keystone
        before = keystone.token_lifetime
        if lifetime_s is not None:
            keystone.token_lifetime = timedelta(seconds=lifetime_s)
        try:
            answer = requests.post(f"{self.cloud.auth_url}/auth/tokens",
                                   json={"auth": auth}, timeout=30)
        finally:
            keystone.token_lifetime = before
        answer.raise_for_status()
        return answer.headers["X-Subject-Token"]

    def expired_token(self) -> str:
        """A token Keystone has issued and now calls expired."""
        if self.expire is not None:
            return self.expire()
        token = self.raw_token(lifetime_s=0.5)
        wait_until(lambda: not self.cloud.keystone.token_valid(token), "the token expires")
        return token

    def call(self, method: str, path: str, *, persona: str | None = "admin",
             token: str | None = None, body: Any = None, raw: bytes | None = None,
             headers: dict[str, str] | None = None) -> Any:
        """One request; the response (werkzeug's TestResponse)."""
        sent = dict(headers or {})
        given = token if token is not None else (self.token(persona) if persona else None)
        if given:
            sent["X-Auth-Token"] = given
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None
                                            else None)
        if data is not None:
            sent.setdefault("Content-Type", "application/json")
        return self.client.open(path, method=method, data=data, headers=sent)


def write_config(path: Path, **sections: dict[str, Any]) -> Path:
    """A consolidator config file of the sections given."""
    lines = []
    for section, options in sections.items():
        lines.append(f"[{section}]")
        lines += [f"{k} = {str(v).lower() if isinstance(v, bool) else v}"
                  for k, v in options.items()]
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o600)     # it may hold [notify] secret
    return path


@contextmanager
def api_world(tmp: Path, monkeypatch: Any, *, service_auth: dict[str, Any] | None = None,
              **sections: dict[str, Any]) -> Iterator[ApiWorld]:
    """Serve the fake cloud and build the API over it with the config sections given
    (service_auth: auth_token's credentials for another Keystone than the fake cloud's)."""
    from consolidator.api.wsgi import make_app

    db_url = f"sqlite:///{tmp / 'api.db'}"
    engine = make_engine(db_url)
    upgrade(engine)
    engine.dispose()
    with FakeCloud(parse_scenario(DOC)) as cloud:
        clouds_yaml = cloud.write_clouds_yaml(tmp / "clouds.yaml")
        monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(clouds_yaml))
        for name in [k for k in __import__("os").environ if k.startswith("OS_") and
                     k != "OS_CLIENT_CONFIG_FILE"]:
            monkeypatch.delenv(name)
        config = write_config(tmp / "consolidator.conf", **sections)
        ctx = AppContext(config_file=str(config), db_url=db_url, cloud="fake")
        yield ApiWorld(cloud, ctx, Client(make_app(ctx, service_auth=service_auth)), tmp)
