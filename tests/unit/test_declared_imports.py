"""Every third-party import is declared where its install brings it (issue 34).

A plain ``pip install .`` crashed on ``-f value`` (render/listing.py imported cliff, which only
the test extra brought), and ``tox -e py3`` on tests/unit/test_pyghmi_io.py (eventlet, which
only the realnova extra brought). The suite ran with every extra installed, so it never saw
either: this test reads the imports from the source and the declarations from setup.cfg.
"""

from __future__ import annotations

import ast
import configparser
import re
import sys
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

#: Modules that run only with an extra installed, and that extra.
EXTRA_ONLY = {
    "consolidator/emulators/realnova/": "realnova",
    "consolidator/core/algorithms/exact_model.py": "exact",
    "consolidator/render/plot.py": "plot",
    "consolidator/telemetry/bus.py": "notify",
    "tests/functional/plots.py": "plot",
    "tests/realnova/": "realnova",
    "consolidator/emulators/realkeystone/": "realkeystone",
    "tests/realkeystone/": "realkeystone",
    "consolidator/api/": "api",
    "consolidator/cli/api.py": "api",
    "consolidator/osc/": "osc",
}
#: Import names that are no distribution's (the project's own, and the test helpers').
OWN = {"consolidator", "tests"}


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements(text: str) -> set[str]:
    names = set()
    for line in text.splitlines():
        match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", line)
        if match:
            names.add(_norm(match.group(1)))
    return names


def declared() -> dict[str, set[str]]:
    """install_requires as 'base' and each extra, as normalised distribution names."""
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    found = {"base": _requirements(cfg["options"]["install_requires"])}
    for extra, text in cfg["options.extras_require"].items():
        found[extra] = _requirements(text)
    return found


def imports(path: Path) -> set[str]:
    """The top-level names of every absolute import in a file (function-level ones too)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n not in OWN}


def undeclared(folder: str, allowed: tuple[str, ...]) -> list[str]:
    """'file: import (distribution)' for each import the declarations do not bring."""
    sources = declared()
    distributions = packages_distributions()
    problems = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        relative = path.relative_to(ROOT).as_posix()
        extras = allowed + tuple(extra for prefix, extra in EXTRA_ONLY.items()
                                 if relative.startswith(prefix))
        gated = len(extras) > len(allowed)
        may = set().union(*(sources[e] for e in ("base", *extras)))
        for name in sorted(imports(path)):
            owners = {_norm(d) for d in distributions.get(name, [])}
            if not owners and gated:
                continue   # that extra is not installed here (tox -e py3): nothing to map
            if not owners:
                problems.append(f"{relative}: {name} (no installed distribution provides it)")
            elif not owners & may:
                problems.append(f"{relative}: {name} ({', '.join(sorted(owners))} is not in "
                                f"{' or '.join(('install_requires', *extras))})")
    return problems


def test_the_package_imports_only_what_install_requires_declares() -> None:
    """Outside the modules an extra gates, the package imports what a plain install has."""
    assert undeclared("consolidator", ()) == []


def test_the_tests_import_only_what_the_test_extra_declares() -> None:
    """tox's py3 env installs the test extra: the unit and functional tests need no more."""
    assert undeclared("tests", ("test",)) == []


def test_the_scan_finds_the_imports_it_checks() -> None:
    """The scan itself: it sees a function-level import and maps it to its distribution."""
    listing = imports(ROOT / "consolidator" / "render" / "listing.py")
    assert "yaml" in listing
    assert "PyYAML" in packages_distributions()["yaml"]
    assert "sqlalchemy" in declared()["base"] and "pytest" in declared()["test"]
