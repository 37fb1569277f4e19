"""The project's fake cloud ('fake-cloud serve', the demo): serve it, or the real Nova."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from consolidator.core.errors import ConsolidatorError, UsageError
from consolidator.emulators.fake.process import stop_child


@dataclass(frozen=True)
class ServeRequest:
    """What 'fake-cloud serve' was asked for, whichever the backend."""

    scenario: str | None
    port: int | None
    clouds_yaml: str | None
    cloud_name: str
    bmc: bool
    bmc_yaml: str | None
    with_api: bool = False
    api_port: int | None = None

    def check_outputs(self) -> None:
        """Refuse, before anything starts or is printed, a file it could not write."""
        for path in (self.clouds_yaml, self.bmc_yaml):
            if path:
                check_writable(path)


def check_writable(path: str) -> None:
    """ConsolidatorError naming the path unless a file can be written there."""
    target = Path(path)
    parent = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise ConsolidatorError(f"cannot write {path}: it is a directory")
    if not parent.is_dir():
        raise ConsolidatorError(f"cannot write {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise ConsolidatorError(f"cannot write {path}: permission denied")


#: The consolidation service in the fake Keystone's catalog (--with-api), as an operator
#: registers it: openstack service create --type consolidation --name consolidator.
API_SERVICE_TYPE = "consolidation"
API_SERVICE_NAME = "consolidator"

#: Starts the API for --with-api: given the running fake cloud and the request, it serves
#: the API on 127.0.0.1 (request.api_port, or any free port) and returns its URL and what
#: stops it. None: this build has no API to serve.
ApiStarter = Callable[[Any, ServeRequest], tuple[str, Callable[[], None]]]
API_STARTER: ApiStarter | None = None


def serve_fake_cloud(request: ServeRequest, echo: Callable[[str], None],
                     wait: Callable[[], None]) -> None:
    """Serve the scenario (and its BMCs, and with_api the API, listed in the catalog) until
    wait() returns; echo says where it listens and what files it wrote."""
    from consolidator.emulators.fake.cloud import FakeCloud

    kwargs: dict[str, Any] = {} if request.port is None else {"port": request.port}
    if request.bmc:
        kwargs["bmc"] = True
    if not request.scenario:
        raise ConsolidatorError("the fake cloud needs a scenario file (--scenario FILE)")
    cloud = FakeCloud(request.scenario, **kwargs)
    if request.with_api:
        check_with_api(cloud)
    name = request.cloud_name
    try:
        cloud.start()
    except OSError as exc:
        http_port = not cloud.listening      # the cloud's own port, not an IPMI BMC's
        cloud.stop()
        if exc.errno != errno.EADDRINUSE or not http_port:
            raise
        port = cloud.settings["port"]
        raise UsageError(f"port {port} on {cloud.host} is in use: choose another --port "
                         f"(or 0 for any free one)") from None
    with cloud, ExitStack() as api:
        echo(f"fake cloud listening: auth URL {cloud.auth_url}")
        if request.with_api and API_STARTER is not None:
            api_url, stop_api = API_STARTER(cloud, request)
            api.callback(stop_api)
            cloud.add_catalog_service(API_SERVICE_TYPE, API_SERVICE_NAME, api_url)
            echo(f"consolidation API listening: {api_url} (type {API_SERVICE_TYPE} in the "
                 f"catalog)")
        echo(f"Prometheus API for [telemetry] prometheus_url: {cloud.prometheus_url}")
        echo(yaml.safe_dump({"clouds": cloud.clouds(name)},
                            sort_keys=False).removesuffix("\n"))
        if cloud.bmcs is not None:
            for line in cloud.bmcs.listening(cloud.base_url):
                echo(f"BMC {line}")
            if request.bmc_yaml:
                cloud.write_bmc_yaml(request.bmc_yaml)
                echo(f"wrote {request.bmc_yaml}")
        if request.clouds_yaml:
            cloud.write_clouds_yaml(request.clouds_yaml, name=name)
            echo(f"wrote {request.clouds_yaml}")
        wait()
        echo("fake cloud stopped")


def check_with_api(cloud: Any) -> None:
    """Refuse --with-api, before anything listens, where it cannot be served: a scenario
    without Keystone (noauth), or a build without the API."""
    if cloud.settings["noauth"]:
        raise UsageError("--with-api needs the fake cloud's Keystone, and the scenario sets "
                         "noauth: true: remove it from the scenario's settings")
    if API_STARTER is None:
        raise UsageError("--with-api: this build of consolidator has no API to serve "
                         "(consolidator.api); serve the fake cloud without --with-api")


def real_nova_argv(request: ServeRequest, nova: dict[str, Any]) -> list[str]:
    """The command line of the real-Nova server (--backend nova) for a request and the
    --hosts, --host-*, --migration-seconds, --service-down-time and --log-file options."""
    from consolidator.emulators.realnova.options import ServeOptions

    options = ServeOptions(
        scenario=request.scenario, hosts=nova["hosts"] or 0, port=request.port or 0,
        host_vcpus=nova["host_vcpus"], host_memory_mb=nova["host_memory_mb"],
        host_disk_gb=nova["host_disk_gb"], clouds_yaml=request.clouds_yaml,
        cloud_name=request.cloud_name, bmc=request.bmc, bmc_yaml=request.bmc_yaml,
        log_file=nova["log_file"], migration_seconds=nova["migration_seconds"],
        service_down_time=nova["service_down_time"],
        report_interval=max(1, nova["service_down_time"] // 5))
    return options.argv()


def stop_fake_cloud(process: subprocess.Popen[bytes]) -> None:
    """Stop a fake cloud served by a child process: SIGTERM, then SIGKILL if it lingers."""
    stop_child(process)
