"""consolidator fake-cloud serve: run the fake cloud in the foreground."""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
import threading
from types import FrameType
from typing import Any

import click

from consolidator.app.fake_cloud import ServeRequest, real_nova_argv, serve_fake_cloud


def optgroup_nova(func: Any) -> Any:
    """The options of --backend nova."""
    for option in reversed([
            click.option("--hosts", type=click.IntRange(1), default=None,
                         help="[nova] Serve N empty hosts of the size below instead of a "
                              "scenario."),
            click.option("--host-vcpus", type=click.IntRange(1), default=16, show_default=True,
                         help="[nova] vCPUs of each --hosts host."),
            click.option("--host-memory-mb", type=click.IntRange(1), default=65536,
                         show_default=True, help="[nova] Memory of each --hosts host."),
            click.option("--host-disk-gb", type=click.IntRange(1), default=1000,
                         show_default=True, help="[nova] Disk of each --hosts host."),
            click.option("--migration-seconds", type=click.FloatRange(0), default=1.0,
                         show_default=True,
                         help="[nova] How long the fake driver 'copies memory' per live "
                              "migration."),
            click.option("--service-down-time", type=click.IntRange(2), default=10,
                         show_default=True,
                         help="[nova] Seconds without a heartbeat before Nova reports a "
                              "nova-compute down (report_interval is a fifth of it)."),
            click.option("--log-file", type=click.Path(dir_okay=False),
                         help="[nova] Write Nova's log here [default: no log]."),
    ]):
        func = option(func)
    return func


def _exec_real_nova(request: ServeRequest, nova: dict[str, Any]) -> None:
    """Replace this process by the real-Nova server (Nova must monkey-patch a fresh one)."""
    if bool(request.scenario) == bool(nova["hosts"]):
        raise click.UsageError("--backend nova needs either --scenario or --hosts")
    if importlib.util.find_spec("nova") is None:  # importing it would monkey-patch us
        raise click.ClickException("--backend nova needs Nova: pip install "
                                   "'consolidator[realnova]'")
    argv = real_nova_argv(request, nova)
    sys.stdout.flush()
    os.execv(argv[0], argv)


@click.group("fake-cloud")
def fake_cloud_group() -> None:
    """The fake OpenStack cloud (Keystone, Nova, Placement) for tests and demos."""


@fake_cloud_group.command("serve")
@click.option("--backend", type=click.Choice(["fake", "nova"]), default="fake",
              show_default=True,
              help="fake: the project's own fast fake cloud. nova: the real Nova and Placement "
                   "with Nova's fake virt driver (pip install 'consolidator[realnova]').")
@click.option("--scenario", type=click.Path(dir_okay=False),
              help="Scenario file (YAML or JSON) to serve.")
@click.option("--port", type=click.IntRange(0, 65535), default=None,
              help="Port on 127.0.0.1 [default: the scenario's settings, else ephemeral].")
@click.option("--write-clouds-yaml", "clouds_yaml", type=click.Path(dir_okay=False),
              help="Write a clouds.yaml for this cloud here once it listens.")
@click.option("--cloud-name", default="fake", show_default=True,
              help="The cloud's name in the clouds.yaml entry.")
@click.option("--bmc", is_flag=True,
              help="Emulate the BMCs the scenario's hosts name (bmc: {driver: ipmi|redfish}).")
@click.option("--write-bmc-yaml", "bmc_yaml", type=click.Path(dir_okay=False),
              help="Write a bmc.yaml (mode 0600) for the emulated BMCs once they listen.")
@click.option("--with-api", is_flag=True,
              help="Also serve consolidator's API, listed in the fake Keystone's catalog "
                   "(type consolidation).")
@click.option("--api-port", type=click.IntRange(0, 65535), default=None,
              help="With --with-api: the API's port on 127.0.0.1 [default: any free one].")
@optgroup_nova
def serve(backend: str, scenario: str | None, port: int | None, clouds_yaml: str | None,
          cloud_name: str, bmc: bool, bmc_yaml: str | None, with_api: bool,
          api_port: int | None, **nova: Any) -> None:
    """Serve a scenario as Keystone, Nova and Placement until SIGINT or SIGTERM.

    With --backend nova, the real nova-api, conductor, scheduler, Placement and one
    nova-compute per host run in this process (no Keystone: every caller is admin).
    """
    if bmc_yaml and not bmc:
        raise click.UsageError("--write-bmc-yaml needs --bmc")
    if api_port is not None and not with_api:
        raise click.UsageError("--api-port needs --with-api")
    if with_api and backend == "nova":
        raise click.UsageError("--with-api needs --backend fake (the real Nova is served "
                               "without Keystone)")
    request = ServeRequest(scenario=scenario, port=port, clouds_yaml=clouds_yaml,
                           cloud_name=cloud_name, bmc=bmc, bmc_yaml=bmc_yaml,
                           with_api=with_api, api_port=api_port)
    request.check_outputs()
    if backend == "nova":
        _exec_real_nova(request, nova)
    if not scenario:
        raise click.UsageError("--scenario is required with --backend fake")
    if nova["hosts"]:
        raise click.UsageError("--hosts needs --backend nova")
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    def wait() -> None:
        sys.stdout.flush()
        while not stop.wait(0.5):
            pass

    if with_api:
        _offer_the_api()
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        serve_fake_cloud(request, click.echo, wait)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _offer_the_api() -> None:
    """Let serve_fake_cloud start the API (--with-api): in this process, on the command's
    database and config, validating tokens with the fake cloud's admin user."""
    from consolidator.app import fake_cloud
    from consolidator.app.context import AppContext
    from consolidator.cli.api import missing_modules
    from consolidator.core.errors import UsageError

    missing = missing_modules()
    if missing:
        raise UsageError(f"--with-api needs the 'api' extra, and {', '.join(missing)} is "
                         f"missing: pip install 'consolidator[api]'")
    app_ctx = click.get_current_context().find_object(AppContext)

    def start(cloud: Any, request: ServeRequest) -> Any:
        from consolidator.api.dev_server import serve_in_thread
        from consolidator.api.wsgi import make_app

        ctx = app_ctx if app_ctx is not None else AppContext()
        ctx.cloud = request.cloud_name
        auth = {"auth_type": "password", **cloud.cloud_config(request.cloud_name)["auth"]}
        return serve_in_thread(make_app(ctx, service_auth=auth), port=request.api_port or 0)
    fake_cloud.API_STARTER = start
