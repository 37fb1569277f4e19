"""consolidator config: the files the package ships for deploying it, and the systemd unit
written for this install."""

from __future__ import annotations

import click

from consolidator.app.shipped import DEFAULT, shipped_file, shipped_files
from consolidator.app.unit_file import SEARCH_PATH_COMMAND, this_install, unit_text
from consolidator.cli.context import echo_listing, output_options
from consolidator.render.listing import Column, Output, listing


@click.group("config")
def config_group() -> None:
    """The shipped sample config, bmc.yaml, systemd unit and Prometheus rules."""


@config_group.command("files")
@output_options()
def config_files(out: Output) -> None:
    """List the shipped files: the name to give 'config sample', and where each is
    installed."""
    records = [{"name": f.name, "purpose": f.purpose, "path": str(f.path)}
               for f in shipped_files()]
    echo_listing(listing(records, (Column("NAME", ("name",)),
                                 Column("WHAT IT IS", ("purpose",), wrap=20),
                                 Column("PATH", ("path",), wrap=20)), out))


@config_group.command("sample")
@click.argument("name", default=DEFAULT)
def config_sample(name: str) -> None:
    """Print a shipped file: the sample INI config by default, or NAME from 'config files'
    (bmc.yaml, consolidator.service, prometheus/recording-rules.yml, ...)."""
    click.echo(shipped_file(name).text(), nl=False)


@config_group.command("unit")
@click.option("--search-path", is_flag=True,
              help="ExecStart=consolidator, found on systemd's search path (/usr/local/bin, "
                   "/usr/bin), as in the shipped copy; default: this install's absolute path.")
def unit_cmd(search_path: bool) -> None:
    """Print the systemd unit, running this install (e.g. a virtual environment's).

    Install it with: consolidator config unit > /etc/systemd/system/consolidator.service
    """
    click.echo(unit_text(SEARCH_PATH_COMMAND if search_path else this_install()), nl=False)
