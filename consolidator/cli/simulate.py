"""consolidator simulate abp|ucac|trace: reproduce the papers' experiments, replay a trace."""

from __future__ import annotations

import json
import time

import click

from consolidator.app.context import AppContext
from consolidator.app.experiments import render_experiment, run_experiment
from consolidator.app.history import HistoryRange, parse_time
from consolidator.app.replay import replay_trace
from consolidator.cli.context import FORMAT, pass_app, report_to_stderr
from consolidator.render.replay import hosts_chart, replay_json, replay_table

EXPERIMENTS = {
    "abp": "section IV of paper 000 (ABP against Pack, Spread and XBalance)",
    "ucac": "section 6.1 of paper 003 (BF-n-sigma, BF-UCaC and BiHeu)",
}


@click.group("simulate")
def simulate_group() -> None:
    """Reproduce the papers' experiments (see docs/reproductions.rst); replay a trace."""


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


@simulate_group.command("trace")
@click.option("--planetlab", "planetlab", metavar="DIR",
              help="A folder of PlanetLab files (one VM per file); VM types in sorted "
                   "file-name order.")
@click.option("--trace", "trace_file", metavar="FILE",
              help="A trace file, CSV or JSON, one entry per instance (docs/replay.rst).")
@click.option("--prometheus", "prometheus_url", metavar="URL",
              help="Replay your own history: the usage recorded in this Prometheus "
                   "('consolidator config sample prometheus/recording-rules.yml') from "
                   "--start to --end.")
@click.option("--start", metavar="TIME", help="With --prometheus: ISO 8601 or Unix seconds.")
@click.option("--end", metavar="TIME", help="With --prometheus: ISO 8601 or Unix seconds.")
@click.option("--step", type=click.IntRange(min=1), default=300, show_default=True,
              help="With --prometheus: seconds between samples.")
@click.option("--hosts-file", metavar="FILE",
              help="A host-model file (YAML or JSON) [default: CloudSim's data centre].")
@click.option("--hosts", type=click.IntRange(min=1), default=800, show_default=True,
              help="Hosts of CloudSim's data centre, when no --hosts-file is given.")
@click.option("--vms", type=click.IntRange(min=1),
              help="Replay only the first N VMs of the trace.")
@click.option("--workload", type=click.Choice(["cloudsim", "full"]),
              help="cloudsim: a VM ends at its first two zero samples in a row, as CloudSim "
                   "3.0.3 runs PlanetLab; full: every VM runs to the end "
                   "[default: cloudsim with --planetlab and the sample, else full].")
@click.option("--policy", "policies", multiple=True, metavar="NAME",
              help="npa, consolidator, thr-mmt-<threshold> or lr-mmt-<safety>; repeatable "
                   "[default: npa, thr-mmt-0.8, lr-mmt-1.2, consolidator].")
@FORMAT
@pass_app
def trace_command(app: AppContext, planetlab: str | None, trace_file: str | None,
                  prometheus_url: str | None, start: str | None, end: str | None, step: int,
                  hosts_file: str | None, hosts: int, vms: int | None,
                  workload: str | None, policies: tuple[str, ...], fmt: str) -> None:
    """Replay a usage trace through the daemon and the reference policies.

    Without --planetlab, --trace or --prometheus, the shipped sample (50 VMs of PlanetLab's
    2011-03-03) is replayed.
    """
    history = _history(prometheus_url, start, end, step)
    app.report = report_to_stderr
    started = time.monotonic()
    doc = replay_trace(app, planetlab=planetlab, trace_file=trace_file,
                       hosts_file=hosts_file, hosts=hosts, vms=vms,
                       policies=policies or None, history=history, workload=workload)
    click.echo(f"done in {time.monotonic() - started:.1f} s", err=True)
    if fmt == "json":
        click.echo(json.dumps(replay_json(doc), indent=2))
    else:
        click.echo(replay_table(doc))
        click.echo("")
        click.echo(hosts_chart(doc))


def _history(url: str | None, start: str | None, end: str | None, step: int
             ) -> HistoryRange | None:
    """--prometheus with --start and --end, or none of them."""
    if url is None:
        if start or end:
            raise click.UsageError("--start and --end go with --prometheus")
        return None
    if not (start and end):
        raise click.UsageError("--prometheus needs --start and --end")
    return HistoryRange(url, parse_time(start), parse_time(end), float(step))
