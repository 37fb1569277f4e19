"""consolidator config unit: what an install needs written out."""

from __future__ import annotations

import click

from consolidator.app.unit_file import SEARCH_PATH_COMMAND, this_install, unit_text


@click.group("config")
def config_group() -> None:
    """Print the files an installation needs: the systemd unit."""


@click.command("unit")
@click.option("--search-path", is_flag=True,
              help="ExecStart=consolidator, found on systemd's search path (/usr/local/bin, "
                   "/usr/bin), as in the shipped copy; default: this install's absolute path.")
def unit_cmd(search_path: bool) -> None:
    """Print the systemd unit, running this install (e.g. a virtual environment's).

    Install it with: consolidator config unit > /etc/systemd/system/consolidator.service
    """
    click.echo(unit_text(SEARCH_PATH_COMMAND if search_path else this_install()), nl=False)


config_group.add_command(unit_cmd)
