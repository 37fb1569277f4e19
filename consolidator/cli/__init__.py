"""The consolidator command line: global options, error translation, command registry."""

from __future__ import annotations

import logging
import sys
import traceback

import click

from consolidator.app.context import AppContext
from consolidator.cli.context import report_to_stderr
from consolidator.errors import ConsolidatorError

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT_SETTINGS)
@click.option("--config", "config_file", type=click.Path(dir_okay=False),
              help="INI config file [default: /etc/consolidator/consolidator.conf if present].")
@click.option("--db-url", envvar="CONSOLIDATOR_DB_URL", metavar="URL",
              help="SQLAlchemy database URL [env: CONSOLIDATOR_DB_URL; default: SQLite in "
                   "~/.local/share/consolidator].")
@click.option("--cloud", envvar="OS_CLOUD", metavar="NAME",
              help="Cloud name in clouds.yaml [env: OS_CLOUD].")
@click.option("-v", "--verbose", count=True,
              help="More logging (-v info, -vv debug); show tracebacks on errors.")
@click.version_option(package_name="consolidator")
@click.pass_context
def cli(ctx: click.Context, config_file: str | None, db_url: str | None, cloud: str | None,
        verbose: int) -> None:
    """Consolidate OpenStack instances onto fewer hosts and power off the idle ones.

    Typical use: snapshot the cloud, plan, review, approve, apply; roll back to any snapshot.
    """
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    logging.basicConfig(level=level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if verbose < 2:
        logging.getLogger("alembic").setLevel(logging.WARNING)
    app = AppContext(config_file=config_file, db_url=db_url, cloud=cloud, verbose=verbose,
                     report=report_to_stderr)
    _ = app.config  # validate the config file up front, whatever the command reads
    ctx.obj = app


def _register() -> None:
    from consolidator.cli import (
        apply,
        daemon,
        db,
        demo,
        fake,
        hosts,
        plans,
        report,
        simulate,
        snapshots,
    )
    for module in (db, snapshots, plans, apply, hosts, daemon, report, simulate, fake, demo):
        for command in module.COMMANDS:
            cli.add_command(command)


_register()


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; every error becomes one line on stderr and an exit code."""
    args = sys.argv[1:] if argv is None else argv
    verbose = any(a in ("-v", "--verbose") or (a.startswith("-v") and set(a[1:]) == {"v"})
                  for a in args)
    try:
        cli.main(args=args, prog_name="consolidator", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.UsageError as exc:
        exc.show()
        return 2
    except click.exceptions.Abort:
        click.echo("consolidator: aborted", err=True)
        return 1
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except ConsolidatorError as exc:
        if verbose:
            traceback.print_exc()
        click.echo(f"consolidator: error: {exc}", err=True)
        return exc.exit_code
    except KeyboardInterrupt:
        click.echo("consolidator: interrupted", err=True)
        return 130
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, no traceback
        if verbose:
            traceback.print_exc()
        click.echo(f"consolidator: unexpected error: {type(exc).__name__}: {exc} "
                   f"(run with --verbose for the traceback)", err=True)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
