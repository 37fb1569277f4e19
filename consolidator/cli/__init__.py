"""The consolidator command line: global options, error translation, command registry."""

from __future__ import annotations

import sys
import traceback

import click

from consolidator.app.context import AppContext
from consolidator.cli.context import report_to_stderr
from consolidator.cli.logs import configure_logging, stderr_is_journal
from consolidator.core.errors import ConsolidatorError

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"], "max_content_width": 100}

#: Every command: its module, the click object's name there, and its one-line summary (a test
#: checks each summary against the command's own). A command's module, and what it imports
#: (openstacksdk, SQLAlchemy, NumPy, the BMC libraries), loads only when it runs, so that
#: 'consolidator --help' starts at once.
COMMANDS: dict[str, tuple[str, str, str]] = {
    "algorithms": ("plans", "algorithms_cmd",
                   "List the packing algorithms and rankings, each with its paper."),
    "api": ("api", "api_cmd", "Serve the HTTP API: Keystone tokens, oslo.policy rules, jobs "
                              "for the daemon."),
    "apply": ("apply", "apply_cmd", "Run a plan: live-migrate, disable and power off the "
                                    "emptied hosts, journaling it all."),
    "bmc-check": ("bmcs", "bmc_check_cmd",
                  "Read every BMC: its system's identity and power, and whether Nova agrees."),
    "config": ("config", "config_group",
               "The shipped sample config, bmc.yaml, systemd unit and Prometheus rules."),
    "daemon": ("daemon", "daemon_cmd", "Snapshot, plan, (auto-)apply and keep the padding on "
                                       "schedule ([daemon], [padding])."),
    "db": ("db", "db_group", "Manage the database: its schema and its history."),
    "demo": ("demo", "demo_cmd", "Run the whole story on a fake cloud with emulated BMCs, "
                                 "verifying every step."),
    "fake-cloud": ("fake", "fake_cloud_group", "The fake OpenStack cloud (Keystone, Nova, "
                                               "Placement) for tests and demos."),
    "hosts": ("hosts", "hosts_group", "The live compute hosts and their power."),
    "journal": ("hosts", "journal_cmd",
                "The executor's journal: every action, when, on which host, by whom, and "
                "how it ended."),
    "plan": ("plans", "plan_group",
             "Make a migration plan, store it as proposed and print it for review."),
    "plans": ("plans", "plans_group", "List and compare stored plans."),
    "report": ("report", "report_cmd", "Show the hosts powered on over time, the migrations "
                                       "per cycle and the energy saved."),
    "rollback": ("apply", "rollback_cmd", "Put the cloud back as a snapshot recorded it: "
                                          "power on, enable, migrate back."),
    "simulate": ("simulate", "simulate_group",
                 "Reproduce the papers' experiments (see docs/reproductions.rst); replay a "
                 "trace."),
    "snapshot": ("snapshots", "snapshot_cmd",
                 "Record the cloud's placement as a new snapshot and print its id."),
    "snapshots": ("snapshots", "snapshots_group", "List, show and export recorded snapshots."),
}


class LazyGroup(click.Group):
    """A group whose commands are imported when one runs, not when the CLI starts."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command name, sorted."""
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """Import the command's module and return the command."""
        if cmd_name not in COMMANDS:
            return None
        import importlib

        module, attribute, _ = COMMANDS[cmd_name]
        return getattr(importlib.import_module(f"consolidator.cli.{module}"), attribute)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of --help, from the summaries (no module is imported)."""
        heading = "Commands"   # click's own section title, not a config section
        with formatter.section(heading):
            formatter.write_dl([(name, COMMANDS[name][2]) for name in sorted(COMMANDS)])


@click.group(cls=LazyGroup, context_settings=CONTEXT_SETTINGS)
@click.option("--config", "config_file", type=click.Path(dir_okay=False),
              help="INI config file [default: /etc/consolidator/consolidator.conf if present].")
@click.option("--db-url", envvar="CONSOLIDATOR_DB_URL", metavar="URL",
              help="SQLAlchemy database URL [env: CONSOLIDATOR_DB_URL; default: SQLite in "
                   "~/.local/share/consolidator].")
@click.option("--cloud", "--os-cloud", "cloud", envvar="OS_CLOUD", metavar="NAME",
              help="Cloud name in clouds.yaml (--os-cloud as in the openstack client) "
                   "[env: OS_CLOUD].")
@click.option("-v", "--verbose", count=True,
              help="More logging (-v info, -vv debug); show tracebacks on errors.")
@click.version_option(package_name="consolidator")
@click.pass_context
def cli(ctx: click.Context, config_file: str | None, db_url: str | None, cloud: str | None,
        verbose: int) -> None:
    """Consolidate OpenStack instances onto fewer hosts and power off the idle ones.

    Typical use: snapshot the cloud, plan, review, approve, apply; roll back to any snapshot.
    """
    configure_logging(verbose)
    app = AppContext(config_file=config_file, db_url=db_url, cloud=cloud, verbose=verbose,
                     report=report_to_stderr)
    _ = app.config  # validate the config file up front, whatever the command reads
    ctx.obj = app
    ctx.call_on_close(app.close)   # after the command: its queued notifications


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; every error becomes one line on stderr and an exit code."""
    args = sys.argv[1:] if argv is None else argv
    verbose = any(a in ("-v", "--verbose") or (a.startswith("-v") and set(a[1:]) == {"v"})
                  for a in args)
    try:
        cli.main(args=args, prog_name="consolidator", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.exceptions.NoArgsIsHelpError as exc:   # a bare group: its help, as asked
        exc.show()
        return 2
    except click.UsageError as exc:
        _say(f"consolidator: error: {usage_line(exc)}")
        return 2
    except click.exceptions.Abort:
        _say("consolidator: aborted", priority=5)
        return 1
    except click.ClickException as exc:
        _say(f"consolidator: error: {' '.join(exc.format_message().split())}")
        return exc.exit_code
    except ConsolidatorError as exc:
        if verbose:
            traceback.print_exc()
        _say(f"consolidator: error: {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        _say("consolidator: interrupted", priority=5)
        return 130
    except Exception as exc:  # noqa: BLE001 - the last line of defence: one line, no traceback
        if verbose:
            traceback.print_exc()
        if isinstance(exc, OSError):   # a file, or standard output, it could not write
            code = _os_error(exc)
            if code is not None:
                return code
        # with --verbose the traceback is printed above: no hint to ask for it
        hint = "" if verbose else " (run with --verbose for the traceback)"
        _say(f"consolidator: unexpected error: {type(exc).__name__}: {exc}{hint}")
        return 1
    return 0


def _say(line: str, priority: int = 3) -> None:
    """The command's last word on stderr; under systemd with its syslog priority (<3> for an
    error), so that 'journalctl -p err' shows why the service stopped."""
    prefix = f"<{priority}>" if stderr_is_journal(sys.stderr) else ""
    click.echo(f"{prefix}{line}", err=True)


def usage_line(exc: click.UsageError) -> str:
    """click's usage error as one line, pointing at the command's --help (click prints its
    usage, a hint and the error on three)."""
    command = exc.ctx.command_path if exc.ctx is not None else "consolidator"
    message = " ".join(exc.format_message().split()).rstrip(".")
    return f"{message} (see '{command} --help')"


def _os_error(exc: OSError) -> int | None:
    """One line naming the file an OSError is about; for standard output (a full disk) it
    then goes to /dev/null so that the exit flush is quiet. None: an error of neither kind
    (a network one), left to the generic line. (click already ends a closed pipe quietly.)"""
    import contextlib
    import errno
    import os

    if isinstance(exc, ConnectionError):
        return None
    if exc.filename is not None:
        _say(f"consolidator: error: {exc.filename}: {exc.strerror or exc}")
        return 1
    if exc.errno not in (errno.ENOSPC, errno.EIO, errno.EFBIG, errno.EDQUOT, errno.EBADF):
        return None
    try:
        where = f"standard output ({os.readlink(f'/proc/self/fd/{sys.stdout.fileno()}')})"
    except (OSError, ValueError):
        where = "standard output"
    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    _say(f"consolidator: error: cannot write {where}: {exc.strerror}")
    return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
