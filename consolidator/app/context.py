"""What every use case is given: the config, the database, the cloud and the BMCs."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from consolidator.app.config import Config, load_config

if TYPE_CHECKING:
    from sqlalchemy import Engine

    from consolidator.app.settings import ContextSettings
    from consolidator.core.model import Host
    from consolidator.execution.executor import PowerLookup

Reporter = Callable[[str], None]


def _silent(_line: str) -> None:
    """The default reporter: say nothing."""


@dataclass
class AppContext:
    """The global options, and the config, engine, cloud and BMCs they lead to.

    Made by the CLI from its options, or by a test or embedding program with ``config``,
    ``engine``, ``connector`` and ``power`` given directly.
    """

    config_file: str | None = None
    db_url: str | None = None
    cloud: str | None = None
    verbose: int = 0
    bmc_file: str | None = None
    report: Reporter = _silent
    #: cloud name (None: the default) -> an openstacksdk Connection.
    connector: Callable[[str | None], Any] | None = None
    #: host name -> its PowerDriver (None without a BMC); default: from the BMC file.
    power: PowerLookup | None = None
    #: A dry run's context: a scratch database, and plans run on a simulated cloud.
    simulate: bool = False
    #: The notifications waiting to be sent (app/notify.py), made at the first event.
    outbox: Any = field(default=None, repr=False)
    #: An operator's SIGTERM or SIGINT stopped the command's run: it ends without waiting for
    #: the queued notifications (they are dropped, journaled and counted).
    signalled: bool = False
    #: Who asks (a Keystone user through the API); None: this process's OS user.
    actor: Any = None
    _config: Config | None = field(default=None, repr=False)
    _engine: Engine | None = field(default=None, repr=False)
    #: The engine's schema was found current: a long-running process (the API, the daemon)
    #: checks it once, not at every use of the store.
    _migrated: bool = field(default=False, repr=False)

    @classmethod
    def of(cls, *, config: Config, engine: Engine, connect: Callable[[], Any],
           power: PowerLookup | None = None, report: Reporter = _silent,
           cloud: str | None = None) -> AppContext:
        """A context for a program that already holds its config, engine and cloud."""
        return cls(cloud=cloud, report=report, connector=lambda _name: connect(), power=power,
                   _config=config, _engine=engine)

    def close(self) -> None:
        """End the context's work: the queued notifications get at most [notify] deadline
        to leave (after every lease is released; none once a signal stopped the run), and
        the rest are dropped."""
        if self.outbox is not None:
            from consolidator.app.settings import notify_settings

            outbox, self.outbox = self.outbox, None
            outbox.close(0.0 if self.signalled else notify_settings(self.config).deadline)

    @property
    def config(self) -> Config:
        """The validated config (defaults when no file is given or present)."""
        if self._config is None:
            config = load_config(self.config_file, required=self.config_file is not None)
            from consolidator.app.settings import (
                check_notify,
                check_plugin_names,
                check_review,
                check_schedule,
                config_scope,
            )

            check_plugin_names(config)
            check_notify(config)
            check_schedule(config)
            check_review(config)
            config_scope(config)
            self._config = config
        return self._config

    @property
    def settings(self) -> ContextSettings:
        """Where the config says the database, the cloud and the BMC file are."""
        from consolidator.app.settings import context_settings

        return context_settings(self.config)

    @property
    def database_url(self) -> str | None:
        """--db-url, else [database] url, else None (the SQLite default)."""
        return self.db_url or self.settings.database_url or None

    def engine(self, *, migrated: bool = True) -> Engine:
        """The database engine; by default it must be at the current schema revision."""
        from consolidator.store.db import check_migrated, make_engine

        if self._engine is None:
            self._engine = make_engine(self.database_url, create=not migrated)
        if migrated and not self._migrated:
            check_migrated(self._engine)
            self._migrated = True
        return self._engine

    @property
    def cloud_name(self) -> str | None:
        """--cloud / OS_CLOUD, else [cloud] name, else None."""
        return self.cloud or self.settings.cloud_name or os.environ.get("OS_CLOUD")

    def connect(self, cloud: str | None = None) -> Any:
        """An openstacksdk Connection to `cloud`, else to this context's cloud."""
        name = cloud or self.cloud_name
        if self.connector is not None:
            return self.connector(name)
        from consolidator.openstack.connection import connect

        return connect(name)

    def bmc_path(self) -> str:
        """The BMC file: --bmc-file, else systemd's credential bmc.yaml (LoadCredential=,
        in $CREDENTIALS_DIRECTORY), else [power] bmc_file."""
        if self.bmc_file:
            return self.bmc_file
        credentials = os.environ.get("CREDENTIALS_DIRECTORY")
        if credentials and (Path(credentials) / "bmc.yaml").is_file():
            return str(Path(credentials) / "bmc.yaml")
        return self.settings.bmc_file

    def bmc_hosts(self) -> set[str] | None:
        """The hosts the BMC file lists, or None when there is no BMC file (a lookup given
        directly lists every host it knows of as None: unknown)."""
        if self.power is not None:
            return None
        from consolidator.power.bmc_file import load_bmc_file

        path = self.bmc_path()
        if self.bmc_file is None and not Path(path).exists():
            return None
        return set(load_bmc_file(path))

    def read_only_power_lookup(self) -> PowerLookup:
        """The lookup given directly, else a fresh one over the BMC file that this context
        does not keep (so bmc_hosts() still tells which hosts the file lists)."""
        if self.power is not None:
            return self.power
        return _bmc_file_lookup(self.bmc_path(),
                                required=self.bmc_file is not None)

    def power_lookup(self) -> PowerLookup:
        """host name -> its PowerDriver, from the BMC file (None for hosts it does not list)."""
        if self.power is None:
            self.power = _bmc_file_lookup(self.bmc_path(),
                                          required=self.bmc_file is not None)
        return self.power


def host_driver(lookup: PowerLookup, host: Host) -> Any:
    """The host's power driver: the BMC file's entry for its hypervisor name, else for its
    nova-compute host; None if the file lists neither."""
    return lookup(host.name) or (lookup(host.compute_host)
                                 if host.compute_host and host.compute_host != host.name
                                 else None)


def _bmc_file_lookup(path: str, *, required: bool) -> PowerLookup:
    """A lookup over a BMC file; a missing default file means no host has a BMC."""
    from consolidator.core.errors import MissingBmcFile
    from consolidator.power.bmc_file import load_bmc_file
    from consolidator.power.catalog import driver_for

    exists = Path(path).exists()
    if required and not exists:
        raise MissingBmcFile(f"{path}: no such BMC file")
    configs = load_bmc_file(path) if exists else {}
    drivers: dict[str, Any] = {}

    def lookup(host: str) -> Any:
        if host not in configs:
            return None
        if host not in drivers:
            drivers[host] = driver_for(configs[host])
        return drivers[host]
    return lookup
