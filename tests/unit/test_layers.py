"""The import rules of docs/architecture.rst, checked over the source with the ast module.

Every import counts, at module level or inside a function: a lazy import still ties the
layers together.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "consolidator"

#: Layer of each top-level module or package of consolidator.
CORE = {"algorithms", "rankings", "render", "simulate", "model", "constraints", "checker",
        "planner", "plan", "journal_entry", "zones", "padding", "scenario", "registry",
        "scenario_cache", "yaml_loader", "front", "errors", "config", "report", "rollback",
        "energy", "energy_objective", "move_queue", "move_runner", "progress", "demand", "fit",
        "options", "wording"}
ADAPTERS = {"cloud", "inventory", "nova", "placement", "power_off", "telemetry", "metrics",
            "realnova", "simulated",
            "executor", "resume", "power",
            "store", "fake"}
APP = {"app"}
TOP = {"cli", "daemon", "demo", "__main__", "__init__"}
#: Third-party libraries that belong at the edges, never in the core.
EDGE_LIBRARIES = {"openstack", "keystoneauth1", "sqlalchemy", "alembic", "click", "sushy",
                  "pyghmi", "requests", "prometheus_client", "apscheduler", "psycopg"}


def layer(part: str) -> str:
    """The layer of a top-level module or package name."""
    for name, members in (("core", CORE), ("adapter", ADAPTERS), ("app", APP), ("top", TOP)):
        if part in members:
            return name
    raise AssertionError(f"consolidator.{part} is in no layer: add it to tests/unit/"
                         f"test_layers.py and docs/architecture.rst")


def imports(path: Path) -> list[str]:
    """Every module path a file imports, absolute."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
            found += [f"{node.module}.{alias.name}" for alias in node.names]
    return found


def sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts)


def owner(path: Path) -> str:
    """The top-level module or package a source file belongs to."""
    rel = path.relative_to(PACKAGE)
    return rel.parts[0].removesuffix(".py")


def scanned() -> list[tuple[str, str, list[str]]]:
    """(owner, file, imported modules) for every source file of the package."""
    return [(owner(p), str(p.relative_to(PACKAGE.parent)), imports(p)) for p in sources()]


def violations(files: list[tuple[str, str, list[str]]]) -> list[str]:
    """Every import that breaks a rule, as 'file: imports module (why)'."""
    allowed = {"core": {"core"}, "adapter": {"core", "adapter"},
               "app": {"core", "adapter", "app"}, "top": {"core", "adapter", "app", "top"}}
    found = []
    for mine_name, where, modules in files:
        mine = layer(mine_name)
        for module in modules:
            root = module.split(".")[0]
            if root in EDGE_LIBRARIES and mine == "core":
                found.append(f"{where}: imports {module} (the core uses no edge library)")
            if root != "consolidator" or module.count(".") == 0:
                continue
            target = module.split(".")[1]
            if not ((PACKAGE / target).is_dir() or (PACKAGE / f"{target}.py").exists()):
                continue  # a name imported from the package itself (e.g. __version__)
            theirs = layer(target)
            if theirs not in allowed[mine]:
                found.append(f"{where}: imports {module} (a {mine} module may not import "
                             f"the {theirs} layer)")
            if target == "cli" and mine_name not in {"cli", "__main__"}:
                found.append(f"{where}: imports {module} (only cli/ imports cli/)")
    return found


def test_every_module_is_in_a_layer() -> None:
    for path in sources():
        layer(owner(path))


def test_import_rules_hold() -> None:
    assert violations(scanned()) == []


@pytest.mark.parametrize("owner_name, source, rule", [
    ("model", "import sqlalchemy\n", "edge library"),
    ("planner", "from consolidator.store.db import make_engine\n", "may not import the adapter"),
    ("inventory", "from consolidator.app.context import AppContext\n", "may not import the app"),
    ("app", "from consolidator.cli import main\n", "may not import the top"),
    ("daemon", "from consolidator.cli.context import pass_app\n", "only cli/ imports cli/"),
])
def test_the_check_catches_a_breach(tmp_path: Path, owner_name: str, source: str,
                                    rule: str) -> None:
    """A breach of each rule in a made-up file is reported."""
    probe = tmp_path / "probe.py"
    probe.write_text(source)
    found = violations([(owner_name, "probe.py", imports(probe))])
    assert any(rule in v for v in found), found


def test_one_code_path_reads_the_cloud() -> None:
    """Only app/snapshots.read_cloud calls the inventory, so every reader gets the config's
    ratios, paging and telemetry."""
    callers = set()
    for path in sources():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "read_inventory":
                callers.add(str(path.relative_to(PACKAGE)))
    assert callers == {"app/snapshots.py"}
