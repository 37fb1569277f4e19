"""The papers' experiments, reproduced by name ('consolidator simulate')."""

from __future__ import annotations

import importlib
from typing import Any


def run_experiment(name: str, **kwargs: Any) -> Any:
    """Run experiments/<name>.py with its seed and seeds; its result."""
    return importlib.import_module(f"consolidator.experiments.{name}").run(**kwargs)


def render_experiment(name: str, result: Any) -> str:
    """An experiment's result as its own tables."""
    return str(importlib.import_module(f"consolidator.experiments.{name}").render(result))
