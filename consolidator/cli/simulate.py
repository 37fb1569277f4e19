"""consolidator simulate abp|ucac: reproduce the papers' experiments."""

from __future__ import annotations

import json
import time

import click

from consolidator.app.experiments import render_experiment, run_experiment
from consolidator.cli.context import FORMAT

EXPERIMENTS = {
    "abp": "section IV of paper 000 (ABP against Pack, Spread and XBalance)",
    "ucac": "section 6.1 of paper 003 (BF-n-sigma, BF-UCaC and BiHeu)",
}


@click.group("simulate")
def simulate_group() -> None:
    """Reproduce the papers' experiments (see docs/reproductions.md)."""


def _command(name: str, what: str) -> click.Command:
    @simulate_group.command(name, help=f"Reproduce {what}.")
    @click.option("--seeds", type=click.IntRange(min=1),
                  help="Independent runs to average [default: the experiment's own].")
    @click.option("--seed", type=int, default=0, show_default=True, help="The first seed.")
    @FORMAT
    def run(seeds: int | None, seed: int, fmt: str) -> None:
        kwargs = {"seed": seed} | ({"seeds": seeds} if seeds else {})
        click.echo(f"simulating {what} ...", err=True)
        started = time.monotonic()
        result = run_experiment(name, **kwargs)
        click.echo(f"done in {time.monotonic() - started:.1f} s", err=True)
        click.echo(json.dumps(result, indent=2) if fmt == "json"
                   else render_experiment(name, result))
    return run


for _name, _what in EXPERIMENTS.items():
    _command(_name, _what)
