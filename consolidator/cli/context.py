"""The click side of the AppContext: how commands receive it."""

from __future__ import annotations

import math
from typing import Any

import click

from consolidator.app.context import AppContext

pass_app = click.make_pass_decorator(AppContext)

#: The --bmc-file option of every command that talks to BMCs.
BMC_FILE = click.option("--bmc-file", envvar="CONSOLIDATOR_BMC_FILE", metavar="FILE",
                        help="BMC credentials [env: CONSOLIDATOR_BMC_FILE; default: [power] "
                             "bmc_file, /etc/consolidator/bmc.yaml].")

#: The --format option of every command that can print JSON.
FORMAT = click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table",
                      show_default=True, help="Output format.")


def report_to_stderr(line: str) -> None:
    """The CLI's reporter: progress lines go to stderr."""
    click.echo(line, err=True)


class FiniteRange(click.FloatRange):
    """A float range that also refuses nan (which passes every bound) and infinity."""

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value} is not a finite number", param, ctx)
        return number
