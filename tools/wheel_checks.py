"""The Python side of tools/check_wheel.sh, run by the installed wheel's interpreter (so it
imports the installed package, not this tree's).

  python tools/wheel_checks.py imports           import every module a plain install reaches
  python tools/wheel_checks.py commands          print every command path, one a line
  python tools/wheel_checks.py sample            'config sample' is the packaged config; loads
  python tools/wheel_checks.py listing FMT FILE rows|any   FILE parses as -f FMT (with rows)
"""

from __future__ import annotations

import csv
import importlib
import io
import json
import pkgutil
import subprocess
import sys
import tempfile

#: Modules only an extra makes importable (and the alembic scripts, which alembic loads):
#: the openstack plugin (osc-lib, the [osc] extra), the API and its dashboard ([api]).
EXTRAS = ("consolidator.emulators.realnova", "consolidator.core.algorithms.exact_model",
          "consolidator.store.migrations", "consolidator.osc", "consolidator.api")


def imports() -> int:
    """Import every module of the installed package outside the extras; 1 if any fails."""
    import consolidator

    bad = []
    for module in pkgutil.walk_packages(consolidator.__path__, "consolidator."):
        if module.name.startswith(EXTRAS) or module.name.endswith(".__main__"):
            continue
        try:
            importlib.import_module(module.name)
        except Exception as exc:  # noqa: BLE001 - report every one
            bad.append(f"{module.name}: {type(exc).__name__}: {exc}")
    print("\n".join(bad) or f"{consolidator.__file__}: every module imports")
    return 1 if bad else 0


def commands() -> int:
    """Print every command and group as its words after 'consolidator' (the root: empty)."""
    import click

    from consolidator.cli import cli

    def walk(command: click.Command, path: list[str], ctx: click.Context) -> None:
        print(" ".join(path))
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None, name
                walk(sub, [*path, name], click.Context(sub, info_name=name, parent=ctx))

    walk(cli, [], click.Context(cli, info_name="consolidator"))
    return 0


def sample() -> int:
    """'consolidator config sample' prints the packaged sample config, and it loads."""
    from consolidator.app.config import load_config
    from consolidator.app.shipped import DEPLOY

    text = subprocess.run(["consolidator", "config", "sample"], check=True,
                          capture_output=True, text=True).stdout
    assert text == (DEPLOY / "consolidator.conf.sample").read_text(), "not the packaged file"
    with tempfile.NamedTemporaryFile("w", suffix=".conf") as copy:
        copy.write(text)
        copy.flush()
        assert load_config(copy.name, required=True).values
    return 0


def listing(fmt: str, path: str, rows: str) -> int:
    """A listing's output parses as its format, with rows where rows are expected."""
    import yaml

    with open(path, encoding="utf-8") as output:
        text = output.read()
    if fmt == "json":
        records = json.loads(text)
        assert isinstance(records, list), "not a JSON list"
    elif fmt == "yaml":
        records = yaml.safe_load(text) or []
        assert isinstance(records, list), "not a YAML list"
    elif fmt == "csv":
        table = list(csv.reader(io.StringIO(text)))
        assert table and all(len(r) == len(table[0]) for r in table), "ragged CSV"
        records = table[1:]
    else:   # value: a row a line; table: a heading and a rule, then rows
        records = text.strip().splitlines()[2 if fmt == "table" else 0:]
    assert records or rows != "rows", f"no rows in -f {fmt}:\n{text}"
    return 0


if __name__ == "__main__":
    verb, *args = sys.argv[1:]
    sys.exit({"imports": imports, "commands": commands, "sample": sample,
              "listing": listing}[verb](*args))
