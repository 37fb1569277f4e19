"""consolidator fake-cloud serve: run the fake cloud in the foreground."""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any

import click
import yaml

from consolidator.fake.cloud import FakeCloud


@click.group("fake-cloud")
def fake_cloud_group() -> None:
    """The fake OpenStack cloud (Keystone, Nova, Placement) for tests and demos."""


@fake_cloud_group.command("serve")
@click.option("--scenario", required=True, type=click.Path(dir_okay=False),
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
def serve(scenario: str, port: int | None, clouds_yaml: str | None, cloud_name: str,
          bmc: bool, bmc_yaml: str | None) -> None:
    """Serve a scenario as Keystone, Nova and Placement until SIGINT or SIGTERM."""
    if bmc_yaml and not bmc:
        raise click.UsageError("--write-bmc-yaml needs --bmc")
    kwargs: dict[str, Any] = {} if port is None else {"port": port}
    if bmc:
        kwargs["bmc"] = True
    cloud = FakeCloud(scenario, **kwargs)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with cloud:
            click.echo(f"fake cloud listening: auth URL {cloud.auth_url}")
            click.echo(f"Prometheus API for [telemetry] prometheus_url: {cloud.prometheus_url}")
            click.echo(yaml.safe_dump({"clouds": {cloud_name: cloud.cloud_config(cloud_name)}},
                                      sort_keys=False), nl=False)
            if cloud.bmcs is not None:
                for line in cloud.bmcs.listening(cloud.base_url):
                    click.echo(f"BMC {line}")
                if bmc_yaml:
                    cloud.write_bmc_yaml(bmc_yaml)
                    click.echo(f"wrote {bmc_yaml}")
            if clouds_yaml:
                cloud.write_clouds_yaml(clouds_yaml, name=cloud_name)
                click.echo(f"wrote {clouds_yaml}")
            click.get_text_stream("stdout").flush()
            while not stop.wait(0.5):
                pass
            click.echo("fake cloud stopped")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


COMMANDS = [fake_cloud_group]
