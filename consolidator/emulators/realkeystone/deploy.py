"""Deploy the real Keystone in this process: its config file, what keystone-manage does
(db_sync, fernet_setup, credential_setup, bootstrap) and its WSGI application.

Importing keystone is slow (seconds), so the keystone-manage steps run here, in the
serving process, instead of four keystone-manage processes. oslo.config parses sys.argv:
the caller clears it before calling anything here."""

from __future__ import annotations

import getpass
import grp
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The password of Keystone's bootstrap admin (user admin, project admin, system admin).
BOOTSTRAP_PASSWORD = "bootstrap-secret"
REGION = "RegionOne"


@dataclass(frozen=True)
class Layout:
    """Where a Keystone keeps its files under one work directory."""

    workdir: Path

    @property
    def config(self) -> Path:
        """keystone.conf."""
        return self.workdir / "keystone.conf"

    @property
    def database(self) -> Path:
        """The SQLite database."""
        return self.workdir / "keystone.db"

    @property
    def log(self) -> Path:
        """Keystone's log."""
        return self.workdir / "keystone.log"


def write_config(layout: Layout, token_expiration_s: int) -> Path:
    """keystone.conf: SQLite, fernet tokens lasting token_expiration_s, bcrypt's fewest
    rounds, no cache, logging to a file."""
    for folder in ("fernet-keys", "credential-keys"):
        (layout.workdir / folder).mkdir(parents=True, exist_ok=True)
    layout.config.write_text(f"""[DEFAULT]
log_file = {layout.log}
use_stderr = false

[database]
connection = sqlite:///{layout.database}

[identity]
# bcrypt's fewest rounds: each password log-in and each user created hashes one, and the
# default (12) costs seconds apiece on a loaded test machine; a test harness, not a cloud
password_hash_rounds = 4

[token]
provider = fernet
expiration = {token_expiration_s}

[fernet_tokens]
key_repository = {layout.workdir / "fernet-keys"}

[credential]
key_repository = {layout.workdir / "credential-keys"}

[cache]
enabled = false
""", encoding="utf-8")
    return layout.config


def manage(layout: Layout, base_url: str) -> None:
    """keystone-manage db_sync, fernet_setup, credential_setup and bootstrap (public,
    internal and admin identity endpoints at base_url/v3), in this process."""
    from keystone.cmd import cli
    from keystone.common import provider_api
    from keystone.conf import CONF

    owner = ["--keystone-user", getpass.getuser(),
             "--keystone-group", grp.getgrgid(os.getgid()).gr_name]
    endpoints = [arg for iface in ("admin", "internal", "public")
                 for arg in (f"--bootstrap-{iface}-url", f"{base_url}/v3")]
    for command in (["db_sync"], ["fernet_setup", *owner], ["credential_setup", *owner],
                    ["bootstrap", "--bootstrap-password", BOOTSTRAP_PASSWORD,
                     "--bootstrap-region-id", REGION, *endpoints]):
        CONF.clear()      # each command parses the command line again
        cli.main(argv=["keystone-manage", "--config-file", str(layout.config), *command])
    CONF.clear()
    CONF.unregister_opt(cli.command_opt)     # the server takes no keystone-manage command
    # bootstrap loaded Keystone's managers and locked their registry; the server loads its
    # own (Keystone's unit tests clear it the same way between tests)
    provider_api.ProviderAPIs._clear_registry_instances()


def application(layout: Layout) -> Any:
    """Keystone's WSGI application, keystone.wsgi.api:application, reading layout's
    config (OS_KEYSTONE_CONFIG_FILES)."""
    os.environ["OS_KEYSTONE_CONFIG_FILES"] = str(layout.config)
    from keystone.wsgi.api import application as app

    return app
