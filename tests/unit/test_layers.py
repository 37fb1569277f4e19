"""The layout rules of docs/architecture.rst, checked over the source with the ast module.

The top-level folders of the package are the layers. Every import counts, at module level,
inside a function or under ``TYPE_CHECKING``: a lazy import still ties two modules together.
"""

from __future__ import annotations

import ast
import statistics
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "consolidator"

#: The layer of each top-level folder or module of consolidator, lowest first.
LAYERS = {
    "core": "core",
    **dict.fromkeys(("execution", "openstack", "power", "store", "telemetry", "scenario",
                     "emulators", "experiments", "render"), "adapter"),
    "app": "app",
    "cli": "cli",
    "osc": "osc",
    "api": "api",
    **dict.fromkeys(("daemon", "demo", "__main__", "__init__"), "entry"),
}
#: Libraries that do I/O (network, files, processes, threads, databases) or belong to an
#: edge: the pure core imports none of them.
IO_LIBRARIES = {"openstack", "keystoneauth1", "sqlalchemy", "alembic", "click", "sushy",
                "pyghmi", "requests", "apscheduler", "psycopg", "prometheus_client", "socket",
                "subprocess", "http", "urllib", "urllib3", "os", "pathlib", "io", "shutil",
                "tempfile", "threading", "concurrent", "multiprocessing", "asyncio", "sqlite3",
                "yaml", "signal", "logging"}
#: Builtins that do I/O: the core calls none of them.
IO_BUILTINS = {"open", "print", "input"}
#: Python files allowed directly in consolidator/, besides __init__.py and __main__.py.
FLAT = {"daemon.py", "demo.py"}


def sources() -> list[Path]:
    """Every source file of the package, alembic's migration scripts aside."""
    return sorted(p for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts)


def module_name(path: Path) -> str:
    """The dotted module a source file defines (a package for its __init__.py)."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer_of(module: str) -> str:
    """The layer of a consolidator module, by its top-level folder."""
    parts = module.split(".")
    top = parts[1] if len(parts) > 1 else "__init__"
    if top not in LAYERS:
        raise AssertionError(f"consolidator.{top} is in no layer: put it in a layer folder "
                             "(docs/architecture.rst) or add it to tests/unit/test_layers.py")
    return LAYERS[top]


def imports(source: str, known: set[str]) -> set[str]:
    """The consolidator modules and the other top-level libraries a source imports."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                found.add(full if full in known else node.module)
    return {m if m.startswith("consolidator") else m.split(".")[0] for m in found}


def io_calls(source: str) -> set[str]:
    """The I/O builtins a source calls."""
    return {node.func.id for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in IO_BUILTINS}


def graph(files: dict[str, str]) -> dict[str, set[str]]:
    """module -> the consolidator modules it imports, for modules given as name -> source."""
    known = set(files)
    return {name: {m for m in imports(src, known) if m in known and m != name}
            for name, src in files.items()}


def violations(files: dict[str, str]) -> list[str]:
    """Every import that breaks a layer rule, as 'module: imports X (why)'."""
    known = set(files)
    found = []
    for name, src in files.items():
        mine = layer_of(name)
        for target in sorted(imports(src, known)):
            if not target.startswith("consolidator"):
                if mine == "core" and target in IO_LIBRARIES:
                    found.append(f"{name}: imports {target} (the core does no I/O)")
                continue
            if target == "consolidator" or target not in known:
                continue
            theirs = layer_of(target)
            if mine == "core" and theirs != "core":
                found.append(f"{name}: imports {target} (the core imports only the core)")
            if mine == "adapter" and theirs in {"app", "cli", "entry"}:
                found.append(f"{name}: imports {target} (an adapter imports no {theirs})")
            if theirs == "cli" and mine not in {"cli"} and name != "consolidator.__main__":
                found.append(f"{name}: imports {target} (only cli/ imports cli/)")
            if mine == "osc" and theirs != "osc":
                found.append(f"{name}: imports {target} (osc/ speaks only to the API)")
            if theirs == "osc" and mine != "osc":
                found.append(f"{name}: imports {target} (nothing outside osc/ imports osc/)")
            if theirs == "api" and mine not in {"api", "cli"}:
                found.append(f"{name}: imports {target} (only api/ and cli/ import api/)")
            if mine == "api" and theirs not in {"api", "app", "core"}:
                found.append(f"{name}: imports {target} (api/ calls app/ only)")
            if mine == "app" and theirs in {"cli", "entry", "api"}:
                found.append(f"{name}: imports {target} (app/ imports no {theirs})")
        if mine == "core":
            found += [f"{name}: calls {call}() (the core does no I/O)"
                      for call in sorted(io_calls(src))]
    return found


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The import circles (strongly connected components of more than one module, or a module
    that imports itself), by Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def package_sources() -> dict[str, str]:
    return {module_name(p): p.read_text(encoding="utf-8") for p in sources()}


def test_every_module_is_in_a_layer() -> None:
    for name in package_sources():
        layer_of(name)


def test_the_layer_rules_hold() -> None:
    assert violations(package_sources()) == []


def test_there_are_no_import_circles() -> None:
    assert circles(graph(package_sources())) == []


def test_only_the_entry_points_lie_flat() -> None:
    flat = {p.name for p in PACKAGE.glob("*.py")} - {"__init__.py", "__main__.py"}
    assert flat <= FLAT, f"move {sorted(flat - FLAT)} into a layer folder"


def test_modules_stay_small() -> None:
    """The median module stays under 150 lines, and none exceeds 600 (DESIGN.md's budget)."""
    sizes = {module_name(p): len(p.read_text(encoding="utf-8").splitlines())
             for p in sources() if p.name != "__init__.py"}
    assert statistics.median(sizes.values()) < 150
    assert {name: n for name, n in sizes.items() if n > 600} == {}


@pytest.mark.parametrize("module, source, rule", [
    ("consolidator.core.model", "import sqlalchemy\n", "the core does no I/O"),
    ("consolidator.core.model", "import threading\n", "the core does no I/O"),
    ("consolidator.core.model", "text = open('x').read()\n", "calls open()"),
    ("consolidator.core.planner", "from consolidator.store.db import make_engine\n",
     "the core imports only the core"),
    ("consolidator.openstack.inventory", "from consolidator.app.context import AppContext\n",
     "an adapter imports no app"),
    ("consolidator.execution.executor", "from consolidator import daemon\n",
     "an adapter imports no entry"),
    ("consolidator.app.planning", "from consolidator.cli import main\n", "only cli/ imports cli/"),
    ("consolidator.daemon", "from consolidator.cli.context import pass_app\n",
     "only cli/ imports cli/"),
    ("consolidator.osc.v1.plans", "from consolidator.cli.plans import plan_group\n",
     "osc/ speaks only to the API"),
    ("consolidator.osc.v1.plans", "from consolidator.app.review import approve\n",
     "osc/ speaks only to the API"),
    ("consolidator.cli.plans", "from consolidator.osc.http import ConsolidationClient\n",
     "nothing outside osc/ imports osc/"),
    ("consolidator.api.service", "from consolidator.store.jobs import add\n",
     "api/ calls app/ only"),
    ("consolidator.app.jobs", "from consolidator.api.errors import ApiError\n",
     "only api/ and cli/ import api/"),
])
def test_the_check_catches_a_breach(module: str, source: str, rule: str) -> None:
    """A breach of each rule, in a made-up module among the real ones, is reported."""
    files = package_sources()
    files[module] = source
    found = violations(files)
    assert any(module in v and rule in v for v in found), found


def test_the_check_catches_a_circle() -> None:
    """An import inside a function, or under TYPE_CHECKING, that closes a circle is found."""
    files = package_sources()
    files["consolidator.core.model"] += ("\ndef late():\n"
                                         "    from consolidator.core import planner\n")
    assert any("consolidator.core.model" in c and "consolidator.core.planner" in c
               for c in circles(graph(files)))
    files = package_sources()
    files["consolidator.power.ipmi"] += ("\nif TYPE_CHECKING:\n"
                                         "    from consolidator.power.catalog import DRIVERS\n")
    assert any("consolidator.power.ipmi" in c for c in circles(graph(files)))


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


#: What cli/ may take from the core at run time; other core types only under TYPE_CHECKING.
CLI_CORE = {"consolidator.core.errors", "consolidator.core.wording"}
#: The entry points that are not commands: like cli/, they call app/ (and render/) only.
ENTRY_POINTS = {"consolidator.daemon", "consolidator.demo"}


class _DropTypeChecking(ast.NodeTransformer):
    """Removes the `if TYPE_CHECKING:` blocks of a module (keeping their else)."""

    def visit_If(self, node: ast.If) -> ast.AST | list[ast.stmt]:
        test = node.test
        if getattr(test, "id", None) == "TYPE_CHECKING" or \
                getattr(test, "attr", None) == "TYPE_CHECKING":
            return node.orelse or [ast.Pass()]
        return self.generic_visit(node)


def runtime_imports(source: str, known: set[str]) -> set[str]:
    """What a source imports outside its `if TYPE_CHECKING:` blocks."""
    tree = _DropTypeChecking().visit(ast.parse(source))
    return imports(ast.unparse(ast.fix_missing_locations(tree)), known)


def _reaches_an_adapter(target: str) -> bool:
    """Whether a consolidator module (or a dotted name that may be one) is an adapter other
    than render/."""
    top = target.split(".")[1]
    return LAYERS.get(top) == "adapter" and top != "render"


def named_adapters(source: str) -> set[str]:
    """The adapter folders a source names in a string, as an import_module() target would."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        text = node.values[0] if isinstance(node, ast.JoinedStr) and node.values else node
        value = getattr(text, "value", None)
        if isinstance(text, ast.Constant) and isinstance(value, str) and \
                value.startswith("consolidator.") and _reaches_an_adapter(value):
            found.add(value)
    return found


def entry_violations(files: dict[str, str]) -> list[str]:
    """Every import by which cli/, daemon.py or demo.py reach past app/ (or render/)."""
    known = set(files)
    found = []
    for name, src in files.items():
        cli = layer_of(name) == "cli"
        if not cli and name not in ENTRY_POINTS:
            continue
        found += [f"{name}: imports {target} (call app/, not an adapter)"
                  for target in sorted(imports(src, known))
                  if target in known and target != "consolidator" and _reaches_an_adapter(target)]
        found += [f"{name}: imports {target} by name (call app/, not an adapter)"
                  for target in sorted(named_adapters(src))]
        if cli:
            found += [f"{name}: imports {target} outside TYPE_CHECKING (cli/ takes only "
                      f"errors and wording from the core)"
                      for target in sorted(runtime_imports(src, known))
                      if target in known and layer_of(target) == "core"
                      and target not in CLI_CORE]
    return found


def test_the_commands_and_entry_points_call_app_only() -> None:
    """cli/, daemon.py and demo.py import no adapter but render/; cli/ takes only errors and
    wording from the core, other core types only for type hints."""
    assert entry_violations(package_sources()) == []


@pytest.mark.parametrize("module, source, rule", [
    ("consolidator.cli.apply", "from consolidator.store.leases import LeaseHeldError\n",
     "imports consolidator.store.leases (call app/"),
    ("consolidator.cli.apply", "if TYPE_CHECKING:\n"
                               "    from consolidator.execution.executor import Outcome\n",
     "imports consolidator.execution.executor (call app/"),
    ("consolidator.cli.plans", "from consolidator.core.plan import STATES\n",
     "imports consolidator.core.plan outside TYPE_CHECKING"),
    ("consolidator.cli.simulate",
     "def run(name):\n    importlib.import_module(f'consolidator.experiments.{name}')\n",
     "by name"),
    ("consolidator.daemon", "from consolidator.telemetry.exporter import Metrics\n",
     "imports consolidator.telemetry.exporter (call app/"),
    ("consolidator.demo",
     "if TYPE_CHECKING:\n    from consolidator.store.snapshots import Snapshot\n",
     "imports consolidator.store.snapshots (call app/"),
])
def test_the_entry_check_catches_a_reach_through(module: str, source: str, rule: str) -> None:
    """A made-up command or entry point that reaches past app/ is reported."""
    files = package_sources()
    files[module] = source
    found = entry_violations(files)
    assert any(v.startswith(module) and rule in v for v in found), found


@pytest.mark.parametrize("module, source", [
    ("consolidator.cli.plans", "if TYPE_CHECKING:\n"
                               "    from consolidator.core.model import Cluster\n"
                               "from consolidator.core.errors import ConsolidatorError\n"
                               "from consolidator.render.plan import render_plan\n"),
    ("consolidator.demo", "from consolidator.core.model import Cluster\n"
                          "from consolidator.render import table\n"),
])
def test_the_entry_check_allows_render_and_type_hints(module: str, source: str) -> None:
    """render/, the core's types under TYPE_CHECKING, and the pure core in daemon.py and
    demo.py are allowed."""
    files = package_sources()
    files[module] = source
    assert [v for v in entry_violations(files) if v.startswith(module)] == []


#: The modules that read config values: the schema, and the one module that turns the config
#: into each use case's settings objects.
CONFIG_READERS = {"consolidator.app.config", "consolidator.app.settings"}
#: What reads a value of a Config (and of a configparser, should one be passed around).
CONFIG_READS = {"get", "getint", "getfloat", "getboolean", "section", "values", "sections"}


def config_reads(files: dict[str, str]) -> list[str]:
    """Every read of a config value outside CONFIG_READERS, as 'module:line: the read': a
    get/section call or a values/sections lookup on anything named like a config."""
    def names_a_config(node: ast.expr) -> bool:
        name = getattr(node, "id", None) or getattr(node, "attr", "")
        return "config" in name.lower() or name in {"cfg", "conf"}

    found = []
    for module, src in files.items():
        if module in CONFIG_READERS:
            continue
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, ast.Attribute) and node.attr in CONFIG_READS \
                    and names_a_config(node.value):
                found.append(f"{module}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_only_settings_reads_the_config() -> None:
    """Only app/settings.py reads the config: every other module takes the typed settings it
    makes (one object per use case), so each option is read in one place; a read added
    anywhere else is caught."""
    files = package_sources()
    assert config_reads(files) == []
    for read in ('spare = ctx.config.get("planner", "spare")\n',
                 'zones = config.section("zones")\n',
                 'port = self._config.values[("metrics", "port")]\n'):
        breached = {**files, "consolidator.daemon": files["consolidator.daemon"] + read}
        assert [r for r in config_reads(breached) if r.startswith("consolidator.daemon:")], read
