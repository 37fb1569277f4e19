"""The click side of the AppContext: how commands receive it."""

from __future__ import annotations

import functools
import math
import os
import shutil
import sys
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from typing import Any

import click

from consolidator.app.context import AppContext
from consolidator.render.listing import FORMATS, Output

pass_app = click.make_pass_decorator(AppContext)

#: The --bmc-file option of every command that talks to BMCs.
BMC_FILE = click.option("--bmc-file", envvar="CONSOLIDATOR_BMC_FILE", metavar="FILE",
                        help="BMC credentials [env: CONSOLIDATOR_BMC_FILE; default: [power] "
                             "bmc_file, /etc/consolidator/bmc.yaml].")

#: The --format option of every command that can print JSON.
FORMAT = click.option("-f", "--format", "fmt", type=click.Choice(["table", "json"]),
                      default="table", show_default=True, help="Output format.")


def echo_listing(text: str) -> None:
    """Print a listing; an empty one (-f value with no rows) prints nothing, not a blank
    line, as the openstack client."""
    if text:
        click.echo(text)


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


def terminal_width() -> int:
    """The width to fit tables to: $COLUMNS, else the terminal's; 0 (no fitting) when
    stdout is not a terminal."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    return shutil.get_terminal_size((0, 0)).columns if sys.stdout.isatty() else 0


def output_options(*, extra: tuple[str, ...] = (), long: bool = True,
                   sort: bool = True) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The OpenStack client's output options on a listing or show command: -f/--format
    table|json|yaml|value|csv (plus `extra`), -c/--column (repeatable), --sort-column and
    --sort-descending, and --long (the wide columns). The command receives them as
    ``out: Output``."""
    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(command)
        def wrapper(*args: Any, fmt: str, columns: tuple[str, ...],
                    sort_columns: tuple[str, ...] = (), sort_descending: bool = False,
                    long_: bool = False, **kwargs: Any) -> Any:
            out = Output(fmt=fmt, columns=columns, sort=sort_columns,
                         descending=sort_descending, long=long_, width=terminal_width())
            return command(*args, out=out, **kwargs)

        options = [
            click.option("-f", "--format", "fmt", type=click.Choice([*FORMATS, *extra]),
                         default="table", show_default=True, help="Output format."),
            click.option("-c", "--column", "columns", multiple=True, metavar="COLUMN",
                         help="Only this column (a heading or a JSON key); repeat for more."),
        ]
        if sort:
            options += [
                click.option("--sort-column", "sort_columns", multiple=True,
                             metavar="COLUMN", help="Sort by this column; repeat for more."),
                click.option("--sort-descending", is_flag=True,
                             help="Sort the --sort-column descending."),
            ]
        if long:
            options.append(click.option("--long", "long_", is_flag=True,
                                        help="Show the wide columns too."))
        for option in reversed(options):
            wrapper = option(wrapper)
        return wrapper
    return decorate


_UNITS = {"s": 1, "m": 60, "min": 60, "h": 3600, "d": 86400}


def parse_since(ctx: click.Context | None, param: click.Parameter | None,
                value: str | None) -> datetime | None:
    """A click callback: an ISO 8601 time (naive: UTC), or an age such as 30m, 2h, 7d."""
    if value is None:
        return None
    text = value.strip()
    number = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = text[len(number):] or "s"
    if number.replace(".", "", 1).isdigit() and unit in _UNITS:
        return datetime.now(timezone.utc) - timedelta(seconds=float(number) * _UNITS[unit])
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise click.BadParameter(f"{value!r} is neither an ISO 8601 time nor an age such as "
                                 f"30m, 2h or 7d") from None
    return parsed.replace(tzinfo=timezone.utc) if parsed.tzinfo is None else parsed
