"""FakeCloud: a scenario served as Keystone, Nova and Placement over HTTP on 127.0.0.1."""

from __future__ import annotations

import fnmatch
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import yaml

from consolidator.core.errors import ScenarioError
from consolidator.core.model import Cluster
from consolidator.emulators.fake import migration
from consolidator.emulators.fake.bmc import EmulatedBmcs, write_private_yaml
from consolidator.emulators.fake.bmc_power import BmcPower
from consolidator.emulators.fake.control import Control
from consolidator.emulators.fake.faults import Faults
from consolidator.emulators.fake.keystone import PERSONAS, TOKEN_LIFETIME_S, Keystone
from consolidator.emulators.fake.keystone_projects import Projects
from consolidator.emulators.fake.libvirt_exporter import LibvirtExporters
from consolidator.emulators.fake.microversion import parse_version
from consolidator.emulators.fake.nova import Nova, NovaSettings
from consolidator.emulators.fake.nova_admin import NovaAdmin
from consolidator.emulators.fake.nova_flavors import Flavors
from consolidator.emulators.fake.nova_totals import NovaTotals
from consolidator.emulators.fake.nova_usage import NovaUsage
from consolidator.emulators.fake.placement import Placement
from consolidator.emulators.fake.placement_catalog import PlacementCatalog
from consolidator.emulators.fake.prometheus import Prometheus
from consolidator.emulators.fake.server import App, HTTPServer, Router
from consolidator.emulators.fake.state import CloudState
from consolidator.scenario.files import Scenario, load_scenario

_UNSET: Any = object()

#: Constructor keywords a scenario's `settings:` may set, with their defaults and types.
SETTINGS: dict[str, tuple[Any, tuple[type, ...]]] = {
    "port": (0, (int,)),
    "username": ("admin", (str,)),
    "password": ("secret", (str,)),
    "project": ("admin", (str,)),
    "max_microversion": ("2.96", (str,)),
    "placement": (True, (bool,)),
    "migration_bandwidth_mb_s": (1024.0, (int, float)),
    "migration_queue_seconds": (0.0, (int, float)),
    "service_up_delay_s": (0.0, (int, float)),
    "service_down_delay_s": (0.0, (int, float)),
    "noauth": (False, (bool,)),
    "bmc": (False, (bool,)),
    "bmc_username": ("admin", (str,)),
    "bmc_password": ("bmcpass", (str,)),
    "bmc_graceful_delay_s": (0.5, (int, float)),
    "token_lifetime_s": (TOKEN_LIFETIME_S, (int, float)),
}


def resolve_settings(scenario_settings: Mapping[str, Any] | None,
                     explicit: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults, overridden by the scenario's settings, overridden by explicit arguments."""
    scenario_settings = scenario_settings or {}
    if not isinstance(scenario_settings, Mapping):
        raise ScenarioError("settings: expected a mapping")
    out: dict[str, Any] = {}
    for key, (default, kinds) in SETTINGS.items():
        value = explicit.get(key, _UNSET)
        if value is _UNSET:
            value = scenario_settings.get(key, default)
        if not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool)):
            raise ScenarioError(f"settings: {key} must be {kinds[0].__name__}, got {value!r}")
        out[key] = value
    unknown = set(scenario_settings) - set(SETTINGS)
    if unknown:
        raise ScenarioError(f"settings: unknown key {sorted(unknown)[0]!r} "
                            f"(expected one of {', '.join(SETTINGS)})")
    try:
        version = parse_version(str(out["max_microversion"]))
    except ValueError:
        raise ScenarioError(f"settings: max_microversion must look like 2.96, "
                            f"got {out['max_microversion']!r}") from None
    if version[0] != 2 or version[1] < 1:
        raise ScenarioError(f"settings: max_microversion must be 2.1 or later, "
                            f"got {out['max_microversion']!r}")
    out["max_microversion"] = version
    if out["token_lifetime_s"] <= 0:
        raise ScenarioError(f"settings: token_lifetime_s must be more than 0 seconds, "
                            f"got {out['token_lifetime_s']!r}")
    personas = {u.name for u in PERSONAS.values()}
    if out["username"] in personas:
        raise ScenarioError(f"settings: username {out['username']!r} is one of the fake "
                            f"cloud's persona users ({', '.join(sorted(personas))}): "
                            f"choose another")
    return out


class FakeCloud:
    """Keystone v3, Nova and Placement over a scenario, on a real HTTP server."""

    def __init__(self, scenario: Scenario | str | Path, *, host: str = "127.0.0.1",
                 port: int = _UNSET, username: str = _UNSET, password: str = _UNSET,
                 project: str = _UNSET, max_microversion: str = _UNSET,
                 placement: bool = _UNSET, migration_bandwidth_mb_s: float = _UNSET,
                 migration_queue_seconds: float = _UNSET, service_up_delay_s: float = _UNSET,
                 service_down_delay_s: float = _UNSET,
                 noauth: bool = _UNSET, bmc: bool = _UNSET, bmc_username: str = _UNSET,
                 bmc_password: str = _UNSET, bmc_graceful_delay_s: float = _UNSET,
                 token_lifetime_s: float = _UNSET,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if not isinstance(scenario, Scenario):
            scenario = load_scenario(scenario)
        self.scenario = scenario
        explicit = {"port": port, "username": username, "password": password,
                    "project": project, "max_microversion": max_microversion,
                    "placement": placement,
                    "migration_bandwidth_mb_s": migration_bandwidth_mb_s,
                    "migration_queue_seconds": migration_queue_seconds,
                    "service_up_delay_s": service_up_delay_s,
                    "service_down_delay_s": service_down_delay_s, "noauth": noauth,
                    "bmc": bmc, "bmc_username": bmc_username, "bmc_password": bmc_password,
                    "bmc_graceful_delay_s": bmc_graceful_delay_s,
                    "token_lifetime_s": token_lifetime_s}
        self.settings = resolve_settings(scenario.extras.get("settings"), explicit)
        self.host = host
        self.keystone = Keystone(username=self.settings["username"],
                                 password=self.settings["password"],
                                 project=self.settings["project"],
                                 placement=self.settings["placement"],
                                 token_lifetime_s=float(self.settings["token_lifetime_s"]))
        self.state = CloudState(scenario.cluster, project_id=self.keystone.project_id,
                                user_id=self.keystone.user_id,
                                handle_event=migration.handle_event, clock=clock)
        self.faults = Faults()
        raw_faults = scenario.extras.get("faults") or []
        if not isinstance(raw_faults, list):
            raise ScenarioError("faults: expected a list of fault mappings")
        for rule in raw_faults:
            self.faults.add(rule)
        self.bmcs: EmulatedBmcs | None = None
        if self.settings["bmc"]:
            self.bmcs = EmulatedBmcs(BmcPower(
                self.state, self.faults, self.set_power,
                username=self.settings["bmc_username"], password=self.settings["bmc_password"],
                graceful_delay_s=float(self.settings["bmc_graceful_delay_s"])))
        self.router = self._build_router()
        self._http: HTTPServer | None = None
        # noauth: any request is served, as a Nova deployed with auth_strategy = noauth2.
        token_valid = (lambda _token: True) if self.settings["noauth"] else \
            self.keystone.token_valid
        self._app = App(self.router, self.faults, token_valid)

    def _build_router(self) -> Router:
        router = Router()
        self.keystone.register(router)
        nova = Nova(self.state, self.faults, NovaSettings(
            max_version=self.settings["max_microversion"],
            bandwidth_mb_s=float(self.settings["migration_bandwidth_mb_s"]),
            queue_seconds=float(self.settings["migration_queue_seconds"])))
        nova.register(router)
        admin = NovaAdmin(nova)
        NovaTotals(nova, admin.hypervisor_view).register(router)
        admin.register(router)
        NovaUsage(nova, admin.hypervisor_view).register(router)
        Projects(self.state, self.keystone.project_id, self.keystone.project).register(router)
        Flavors(self.state).register(router)
        if self.settings["placement"]:
            placement = Placement(self.state)
            placement.register(router)
            PlacementCatalog(self.state, placement).register(router)
        Control(self.state, self.faults, self.set_power).register(router)
        Prometheus(self.state).register(router)
        LibvirtExporters(self.state).register(router)
        if self.bmcs is not None:
            self.bmcs.register(router)
        return router

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> FakeCloud:
        """Listen and serve in a background thread; returns self."""
        if self._http is None:
            self._http = HTTPServer(self._app, self.host, self.settings["port"])
            self._http.start()
        if self.bmcs is not None:
            self.bmcs.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every connection."""
        if self.bmcs is not None:
            self.bmcs.stop()
        if self._http is not None:
            self._http.stop()
            self._http = None

    @property
    def listening(self) -> bool:
        """Whether the HTTP server (Keystone, Nova, Placement) is bound and serving."""
        return self._http is not None

    def __enter__(self) -> FakeCloud:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses and client configuration --------------------------------------------

    @property
    def base_url(self) -> str:
        """http://HOST:PORT of the running server."""
        if self._http is None:
            raise RuntimeError("the fake cloud is not started")
        host, port = self._http.address
        return f"http://{host}:{port}"

    @property
    def port(self) -> int:
        """The port it listens on."""
        return int(self.base_url.rsplit(":", 1)[1])

    @property
    def auth_url(self) -> str:
        """The Keystone v3 URL."""
        return f"{self.base_url}/identity/v3"

    @property
    def compute_url(self) -> str:
        """The Nova endpoint."""
        return f"{self.base_url}/compute/v2.1"

    @property
    def placement_url(self) -> str:
        """The Placement endpoint."""
        return f"{self.base_url}/placement"

    @property
    def prometheus_url(self) -> str:
        """The Prometheus-compatible API base URL ([telemetry] prometheus_url)."""
        return f"{self.base_url}/prometheus"

    def cloud_config(self, name: str = "fake", persona: str | None = None) -> dict[str, Any]:
        """One clouds.yaml entry for this cloud (the name is the caller's key for it): as
        the cloud's admin user, or as a persona of PERSONAS (reader, operator, admin)."""
        if self.settings["noauth"]:
            entry: dict[str, Any] = {"auth_type": "none", "auth": {},
                                     "compute_endpoint_override": self.compute_url,
                                     "region_name": "RegionOne"}
            if self.settings["placement"]:
                entry["placement_endpoint_override"] = self.placement_url
            return entry
        user = self.keystone.admin if persona is None else PERSONAS[persona]
        return {"auth": {"auth_url": self.auth_url, "username": user.name,
                         "password": user.password,
                         "project_name": self.settings["project"],
                         "user_domain_name": "Default", "project_domain_name": "Default"},
                "region_name": "RegionOne", "identity_api_version": 3,
                "interface": "public"}

    def clouds(self, name: str = "fake") -> dict[str, dict[str, Any]]:
        """The clouds.yaml entries: name (the admin user) and, unless noauth, name-reader,
        name-operator and name-admin (the personas)."""
        entries = {name: self.cloud_config(name)}
        if not self.settings["noauth"]:
            for persona in PERSONAS:
                entries[f"{name}-{persona}"] = self.cloud_config(f"{name}-{persona}", persona)
        return entries

    def write_clouds_yaml(self, path: str | Path, name: str = "fake") -> Path:
        """Write {"clouds": clouds(name)} as YAML; returns the path."""
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(yaml.safe_dump({"clouds": self.clouds(name)}, sort_keys=False),
                       encoding="utf-8")
        tmp.replace(path)
        return path

    def bmc_config(self) -> dict[str, Any]:
        """The bmc.yaml document for every emulated BMC (needs bmc=True and start())."""
        if self.bmcs is None:
            raise RuntimeError("the fake cloud has no BMCs (bmc=True)")
        return self.bmcs.config(self.base_url)

    def write_bmc_yaml(self, path: str | Path) -> Path:
        """Write bmc_config() as YAML with mode 0600; returns the path."""
        return write_private_yaml(path, self.bmc_config())

    def connect(self, persona: str | None = None, **overrides: Any) -> Any:
        """An openstacksdk Connection to this cloud, ignoring clouds.yaml and OS_* variables:
        as the admin user, or as a persona (reader, operator, admin)."""
        import openstack

        config = self.cloud_config(persona=persona)
        auth = dict(config.pop("auth"))
        for key in list(overrides):
            if key in auth:
                auth[key] = overrides.pop(key)
        auth.update(overrides.pop("auth", {}))
        config.update(overrides)
        return openstack.connect(load_yaml_config=False, load_envvars=False, auth=auth,
                                 **config)

    # -- test hooks --------------------------------------------------------------------

    def set_power(self, host_name: str, on: bool) -> None:
        """Power a host on or off; its nova-compute goes down at once or up after a delay."""
        self.state.set_power(host_name, on, float(self.settings["service_up_delay_s"]),
                             float(self.settings["service_down_delay_s"]))

    def power(self, host_name: str) -> str:
        """'on' or 'off'."""
        rec = self.state.host(host_name)
        if rec is None:
            raise KeyError(f"unknown host {host_name!r}")
        return rec.power

    def add_fault(self, fault: Mapping[str, Any]) -> dict[str, Any]:
        """Add a fault rule (see consolidator.emulators.fake.faults); returns it normalised."""
        return self.faults.add(fault)

    def clear_faults(self) -> None:
        """Remove every fault rule."""
        self.faults.clear()

    def requests(self, path_glob: str = "*", method: str = "*") -> list[dict[str, Any]]:
        """Requests served so far (method, path, query, status, microversion), oldest first."""
        return [{"method": m, "path": p, "query": q, "status": s,
                 "microversion": f"{v[0]}.{v[1]}"}
                for m, p, q, s, v in list(self._app.log)
                if method in ("*", m) and fnmatch.fnmatchcase(p, path_glob)]

    def add_catalog_service(self, kind: str, name: str, url: str) -> None:
        """List a service (e.g. 'consolidation', 'consolidator', the API's URL) in the
        catalog of the tokens Keystone issues from now on, on the public, internal and admin
        interfaces."""
        self.keystone.add_service(kind, name, url)

    def revoke_tokens(self) -> None:
        """Revoke every issued token."""
        self.keystone.revoke_all()

    def _server(self, name_or_id: str) -> Any:
        server = self.state.server(name_or_id)
        if server is None:
            raise KeyError(f"unknown server {name_or_id!r}")
        return server

    def server_host(self, name_or_id: str) -> str:
        """The host (hypervisor hostname, the scenario's host name) a server is on now."""
        with self.state.locked():
            return self._server(name_or_id).host

    def server_status(self, name_or_id: str) -> str:
        """A server's Nova status now (ACTIVE, MIGRATING, SHUTOFF, ...)."""
        with self.state.locked():
            return self._server(name_or_id).status

    def cluster(self) -> Cluster:
        """The live state as a Cluster (hosts with status/state/power, servers where they are)."""
        return self.state.cluster()
