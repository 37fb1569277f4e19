"""The real-Nova server: start the control plane, boot the scenario, serve until SIGTERM."""

from __future__ import annotations

import logging
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from consolidator.core.model import Cluster, Host
from consolidator.core.wording import plural
from consolidator.emulators.fake.bmc import EmulatedBmcs, write_private_yaml
from consolidator.emulators.fake.bmc_power import BmcPower
from consolidator.emulators.fake.control import Control
from consolidator.emulators.fake.faults import Faults
from consolidator.emulators.fake.server import App, HTTPError, Request, Response, Router
from consolidator.emulators.realnova.boot import Booter
from consolidator.emulators.realnova.controlplane import ControlPlane
from consolidator.emulators.realnova.driver import Behaviour
from consolidator.emulators.realnova.options import ServeOptions
from consolidator.emulators.realnova.power import PowerBook
from consolidator.emulators.realnova.wsgi import (
    Listener,
    WsgiApp,
    nova_identity,
    placement_identity,
    project_app,
)
from consolidator.scenario.files import load_scenario

LOG = logging.getLogger(__name__)
#: Scenario settings this backend honours (the project's fake has more; they are ignored).
BMC_SETTINGS = {"bmc_username": "admin", "bmc_password": "bmcpass",
                "bmc_graceful_delay_s": 0.5}


def cluster_for(options: ServeOptions) -> tuple[Cluster, dict[str, Any]]:
    """The scenario's cluster and settings, or --hosts N empty hosts of the given size."""
    if options.scenario:
        scenario = load_scenario(options.scenario)
        return scenario.cluster, dict(scenario.extras.get("settings") or {})
    hosts = tuple(Host(name=f"compute-{n:02d}", vcpus=options.host_vcpus,
                       memory_mb=options.host_memory_mb, disk_gb=options.host_disk_gb,
                       cpu_allocation_ratio=4.0,
                       bmc={"driver": "ipmi" if n % 2 else "redfish"})
                  for n in range(1, options.hosts + 1))
    return Cluster(hosts=hosts), {}


def mount(apps: dict[str, WsgiApp], default: WsgiApp) -> WsgiApp:
    """Serve each app under its path prefix (as devstack mounts /compute and /placement)."""

    def dispatch(environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        path = environ.get("PATH_INFO") or "/"
        for prefix, app in apps.items():
            if path == prefix or path.startswith(prefix + "/"):
                environ["SCRIPT_NAME"] = environ.get("SCRIPT_NAME", "") + prefix
                environ["PATH_INFO"] = path[len(prefix):]
                return app(environ, start_response)
        return default(environ, start_response)

    return dispatch


def rss_mib() -> float:
    """This process's resident memory."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class RealNovaServer:
    """The control plane, its HTTP listener, the BMCs, and the files that describe them."""

    def __init__(self, options: ServeOptions, echo: Callable[[str], None]) -> None:
        self.options = options
        self.echo = echo
        self.cluster, settings = cluster_for(options)
        self.bmc_settings = {k: settings.get(k, v) for k, v in BMC_SETTINGS.items()}
        self.faults = Faults()
        self.behaviour = Behaviour(options.migration_seconds, self.faults)
        self.plane = ControlPlane(options, list(self.cluster.hosts), self.behaviour)
        self.book: PowerBook | None = None
        self.bmcs: EmulatedBmcs | None = None
        self.listener: Listener | None = None
        self.timings: dict[str, float] = {}

    def start(self) -> None:
        """Start everything, boot the scenario and write the clouds.yaml (last)."""
        t0 = time.monotonic()
        self.plane.setUp()
        self.book = PowerBook(self.plane, list(self.cluster.hosts))
        self.timings["control_plane_s"] = time.monotonic() - t0
        self.echo(f"nova control plane and {len(self.cluster.hosts)} nova-compute services "
                  f"up in {self.timings['control_plane_s']:.1f} s")
        t1 = time.monotonic()
        ids = Booter(self.plane, self.cluster, self.options.boot_concurrency,
                     echo=self.echo).run()
        for host in self.cluster.hosts:
            if host.power == "off":
                self.book.set_power(host.name, False)
        self.timings["boot_s"] = time.monotonic() - t1
        self.echo(f"{plural(len(ids), 'server')} ACTIVE on their hosts in "
                  f"{self.timings['boot_s']:.1f} s")
        self._serve()
        self._write_files()
        self.timings["total_s"] = time.monotonic() - t0
        self.echo(f"ready in {self.timings['total_s']:.1f} s, RSS {rss_mib():.0f} MiB")

    def _serve(self) -> None:
        assert self.book is not None
        router = Router()
        Control(self.book, self.faults, self.book.set_power).register(router)  # type: ignore[arg-type]
        router.add("POST", "/_fake/driver", self._driver, service="control", auth=False)
        if self.options.bmc:
            self.bmcs = EmulatedBmcs(BmcPower(
                self.book, self.faults, self.book.set_power,  # type: ignore[arg-type]
                username=str(self.bmc_settings["bmc_username"]),
                password=str(self.bmc_settings["bmc_password"]),
                graceful_delay_s=float(self.bmc_settings["bmc_graceful_delay_s"])))
            self.bmcs.register(router)
        apps = {"/compute": nova_identity(self.plane.nova_app(), self.plane.project_id),
                "/placement": placement_identity(self.plane.placement_app())}
        default = project_app(App(router, self.faults, lambda _token: True))
        self.listener = Listener(mount(apps, default), self.options.port)
        if self.bmcs is not None:
            self.bmcs.start()
        self.echo(f"real Nova listening: {self.compute_url}, Placement {self.placement_url}")
        if self.bmcs is not None:
            for line in self.bmcs.listening(self.base_url):
                self.echo(f"BMC {line}")

    def _driver(self, req: Request) -> Response:
        """POST /_fake/driver {"migration_seconds": S, "resize_seconds": S}."""
        body = req.json()
        if not isinstance(body, dict):
            raise HTTPError(400, "expected a JSON object")
        try:
            return Response(200, self.behaviour.update(body))
        except (TypeError, ValueError) as exc:
            raise HTTPError(400, str(exc)) from None

    @property
    def base_url(self) -> str:
        """http://127.0.0.1:PORT: Nova under /compute, Placement under /placement."""
        assert self.listener is not None
        return self.listener.url

    @property
    def compute_url(self) -> str:
        """Nova's v2.1 endpoint."""
        return f"{self.base_url}/compute/v2.1"

    @property
    def placement_url(self) -> str:
        """Placement's endpoint."""
        return f"{self.base_url}/placement"

    def cloud_config(self) -> dict[str, Any]:
        """The clouds.yaml entry: no Keystone, endpoints given (every caller is admin)."""
        return {"auth_type": "none", "auth": {}, "region_name": "RegionOne",
                "compute_endpoint_override": self.compute_url,
                "placement_endpoint_override": self.placement_url}

    def _write_files(self) -> None:
        opts = self.options
        if opts.bmc_yaml and self.bmcs is not None:
            write_private_yaml(opts.bmc_yaml, self.bmcs.config(self.base_url))
            self.echo(f"wrote {opts.bmc_yaml}")
        doc = {"clouds": {opts.cloud_name: self.cloud_config()}}
        self.echo(yaml.safe_dump(doc, sort_keys=False).rstrip())
        if opts.clouds_yaml:
            path = Path(opts.clouds_yaml)
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
            tmp.replace(path)
            self.echo(f"wrote {opts.clouds_yaml}")

    def stop(self) -> None:
        """Stop serving and tear the control plane down."""
        if self.bmcs is not None:
            self.bmcs.stop()
        if self.listener is not None:
            self.listener.stop()
        try:
            self.plane.doCleanups()
        except Exception:  # noqa: BLE001 - the process is ending anyway
            LOG.exception("cleanup failed")


def run(options: ServeOptions, echo: Callable[[str], None]) -> int:
    """Serve until SIGINT or SIGTERM; 0 on a clean stop, 1 if start-up failed."""
    stopping: list[int] = []

    def on_signal(signum: int, frame: Any) -> None:
        stopping.append(signum)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    server = RealNovaServer(options, echo)
    try:
        server.start()
        while not stopping:
            time.sleep(0.5)
        echo("real Nova stopped")
        return 0
    except Exception as exc:  # noqa: BLE001 - reported as one line, details in the log
        LOG.exception("real Nova failed to start")
        echo(f"real Nova failed: {type(exc).__name__}: {exc}")
        return 1
    finally:
        server.stop()
