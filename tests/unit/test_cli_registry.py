"""The CLI's lazy command registry: the summaries --help prints are the commands' own, and
--help imports none of the heavy libraries."""

from __future__ import annotations

import subprocess
import sys

import click

from consolidator.cli import COMMANDS, cli


def test_every_command_is_registered_with_its_own_summary() -> None:
    ctx = click.Context(cli)
    for name, (_, _, summary) in COMMANDS.items():
        command = cli.get_command(ctx, name)
        assert command is not None and command.name == name
        assert command.get_short_help_str(limit=1000) == summary, name


def test_help_imports_no_heavy_library() -> None:
    code = ("import sys\nfrom consolidator.cli import main\nmain(['--help'])\n"
            "heavy = [m for m in ('openstack', 'sqlalchemy', 'numpy', 'scipy', 'sushy', "
            "'pyghmi', 'yaml') if m in sys.modules]\nprint('HEAVY', heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert "HEAVY []" in out.stdout, out.stdout + out.stderr
    assert "snapshots   List, show and export recorded snapshots." in out.stdout


def test_no_command_s_help_imports_openstacksdk_or_the_bmc_libraries() -> None:
    """Each command's --help loads its module, not the cloud or BMC libraries (hosts --help
    took 1.3 s importing openstacksdk through the executor's Nova calls)."""
    code = ("import sys\nfrom consolidator.cli import COMMANDS, main\n"
            "for name in COMMANDS:\n"
            "    try:\n        main([name, '--help'])\n    except SystemExit:\n        pass\n"
            "heavy = [m for m in ('openstack', 'keystoneauth1', 'scipy', 'sushy', 'pyghmi') "
            "if m in sys.modules]\nprint('HEAVY', heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert "HEAVY []" in out.stdout, out.stdout[-2000:] + out.stderr
