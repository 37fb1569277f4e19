"""Serve the real Keystone (python -m consolidator.emulators.realkeystone) in a subprocess,
and reach it as each of its users: real tokens, real role assignments, real expiry."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import yaml

from consolidator.emulators.fake.process import stop_child
from consolidator.emulators.realkeystone import provision
from tests.functional.waits import PATIENCE_S

#: Start-up (importing Keystone, db_sync, keys, bootstrap, the users) takes 20-40 s on a
#: loaded 2-core machine; the deadline only bounds a start that never ends.
START_TIMEOUT_S = max(PATIENCE_S, 300.0)


@dataclass
class RealKeystone:
    """A served real Keystone: its URLs, its clouds.yaml and ways to log in to it."""

    auth_url: str
    api_url: str
    clouds_yaml: Path
    log_file: Path
    project_id: str
    user_ids: dict[str, str]
    started_in_s: float              # from the server's start to ready (Keystone's steps)
    up_in_s: float                   # from launching the process to ready (what a test waits)
    process: subprocess.Popen[str]
    _clouds: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._clouds = yaml.safe_load(self.clouds_yaml.read_text())["clouds"]

    def cloud(self, persona: str) -> dict[str, Any]:
        """The clouds.yaml entry ks-PERSONA (reader, operator, admin, service)."""
        return dict(self._clouds[f"{provision.CLOUD_PREFIX}-{persona}"])

    def connect(self, persona: str) -> Any:
        """An openstacksdk Connection as a persona, ignoring any other config."""
        import openstack

        return openstack.connect(load_yaml_config=False, load_envvars=False,
                                 **self.cloud(persona))

    def token(self, persona: str) -> str:
        """A fresh project-scoped token of a persona."""
        return str(self.connect(persona).auth_token)

    def expiring_token(self, persona: str, seconds: float) -> tuple[str, datetime]:
        """A real token of a persona that Keystone makes expire within `seconds`, and its
        expiry: issued through an application credential that expires then (Keystone caps
        a token's expiry at its application credential's)."""
        from keystoneauth1 import session
        from keystoneauth1.identity import v3

        conn = self.connect(persona)
        user_id = conn.current_user_id            # logs in: the clock starts after that
        expires = datetime.now(timezone.utc) + timedelta(seconds=seconds)
        credential = conn.identity.create_application_credential(
            user=user_id, name=f"expiring-{time.monotonic_ns()}",
            expires_at=expires.strftime("%Y-%m-%dT%H:%M:%S.%f"))
        auth = v3.ApplicationCredential(auth_url=self.auth_url,
                                        application_credential_id=credential.id,
                                        application_credential_secret=credential.secret)
        access = auth.get_access(session.Session())
        return str(access.auth_token), access.expires

    def set_api_url(self, url: str) -> None:
        """Point the consolidation service's endpoints at url (an API served on a port
        chosen after Keystone started)."""
        provision.set_api_url(self.auth_url, url)
        self.api_url = url

    def auth_token_options(self) -> dict[str, str]:
        """[keystone_authtoken] for a service validating tokens against this Keystone: the
        service user (role service on project service), auth_type = password."""
        service = provision.SERVICE_USER
        return {"auth_type": "password", "auth_url": self.auth_url,
                "www_authenticate_uri": self.auth_url, "username": service.name,
                "password": service.password, "project_name": provision.SERVICE_PROJECT,
                "user_domain_name": "Default", "project_domain_name": "Default",
                "interface": "public"}


@contextmanager
def served_keystone(workdir: Path, *, token_expiration_s: int = 3600,
                    api_url: str | None = None) -> Iterator[RealKeystone]:
    """Serve the real Keystone with its files under workdir until the block ends."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / "served.out"
    args = [sys.executable, "-m", "consolidator.emulators.realkeystone", "--workdir",
            str(workdir), "--token-expiration", str(token_expiration_s)]
    if api_url:
        args += ["--api-url", api_url]
    launched = time.monotonic()
    with out.open("w") as sink:
        process = subprocess.Popen(args, stdout=sink, stderr=subprocess.STDOUT, text=True)
    ready = workdir / "ready.json"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not ready.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the real Keystone did not start:\n{out.read_text()}")
            time.sleep(0.2)
        doc = json.loads(ready.read_text())
        yield RealKeystone(auth_url=doc["auth_url"], api_url=doc["api_url"],
                           clouds_yaml=Path(doc["clouds_yaml"]),
                           log_file=Path(doc["log_file"]), project_id=doc["project_id"],
                           user_ids=doc["user_ids"], started_in_s=doc["started_in_s"],
                           up_in_s=round(time.monotonic() - launched, 1), process=process)
    finally:
        stop_child(process, timeout=30)
