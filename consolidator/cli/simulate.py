"""consolidator simulate abp|ucac|trace: reproduce the papers' experiments, replay a trace."""

from __future__ import annotations

import json
import time
from typing import Any

import click

from consolidator.app.context import AppContext
from consolidator.app.experiments import render_experiment, run_experiment
from consolidator.app.history import HistoryRange, parse_time
from consolidator.app.replay import replay_days, replay_trace
from consolidator.cli.context import FORMAT, pass_app, report_to_stderr
from consolidator.core.errors import UsageError
from consolidator.core.wording import plural
from consolidator.render.plot import check_plot_target, plot_replay
from consolidator.render.replay import (
    days_json,
    days_table,
    hosts_chart,
    replay_json,
    replay_table,
)

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
@click.option("--planetlab", "planetlab", metavar="DAY|DIR", multiple=True,
              help="A bundled PlanetLab day by name (20110303; see --days) or a folder of "
                   "PlanetLab files (one VM per file; VM types in sorted file-name order). "
                   "Repeatable: several days print the per-day table and the medians.")
@click.option("--days", metavar="all|DAY,...",
              help="Replay these bundled PlanetLab days ('all': the ten of "
                   "consolidator/data/planetlab) and print the per-day table and the medians.")
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
@click.option("--cpu-allocation-ratio", "ratio", type=click.FloatRange(min=0, min_open=True),
              help="The hosts' Placement CPU allocation ratio the daemon sees [default: 4, "
                   "Nova's initial ratio, or the --hosts-file's].")
@click.option("--plot", "plot", metavar="FILE",
              help="Also draw, per policy over the day, hosts on, power against the floor, "
                   "hosts overloaded and migrations per step: FILE.svg, .png or .html "
                   "(needs pip install 'consolidator[plot]').")
@click.option("--policy", "policies", multiple=True, metavar="NAME",
              help="npa, consolidator, thr-mmt-<threshold> or lr-mmt-<safety>; repeatable "
                   "[default: npa, thr-mmt-0.8, lr-mmt-1.2, consolidator].")
@FORMAT
@pass_app
def trace_command(app: AppContext, planetlab: tuple[str, ...], days: str | None,
                  trace_file: str | None, prometheus_url: str | None, start: str | None,
                  end: str | None, step: int, hosts_file: str | None, hosts: int,
                  vms: int | None, workload: str | None, ratio: float | None,
                  plot: str | None, policies: tuple[str, ...], fmt: str) -> None:
    """Replay a usage trace through the daemon and the reference policies.

    Without --planetlab, --days, --trace or --prometheus, the shipped sample (50 VMs of
    PlanetLab's 2011-03-03) is replayed.
    """
    if days and planetlab:
        raise UsageError("--days and --planetlab both name the days to replay: give one "
                         "(--days all is the ten bundled days, --planetlab DAY|DIR one each)")
    history = _history(prometheus_url, start, end, step)
    chosen = list(planetlab) + _days(days)
    if plot:
        if len(chosen) > 1:
            raise UsageError("--plot draws one day: give one --planetlab day with it")
        check_plot_target(plot)
    app.report = report_to_stderr
    started = time.monotonic()
    options: dict[str, Any] = {"trace_file": trace_file, "hosts_file": hosts_file, "hosts": hosts,
               "vms": vms, "policies": policies or None, "history": history,
               "workload": workload, "cpu_allocation_ratio": ratio}
    if len(chosen) > 1:
        if trace_file or history:
            raise UsageError("several days go with PlanetLab days only, not with --trace "
                             "or --prometheus")
        docs = replay_days(app, chosen, **{k: v for k, v in options.items()
                                           if k not in ("trace_file", "history")})
        click.echo(f"done in {time.monotonic() - started:.1f} s", err=True)
        click.echo(json.dumps(days_json(docs), indent=2) if fmt == "json"
                   else days_table(docs))
        return
    doc = replay_trace(app, planetlab=chosen[0] if chosen else None, **options)
    click.echo(f"done in {time.monotonic() - started:.1f} s", err=True)
    out = replay_json(doc)
    if plot:
        plot_replay(out["series"], plot, title=_title(chosen, doc))
        click.echo(f"wrote {plot}", err=True)
    if fmt == "json":
        click.echo(json.dumps(out, indent=2))
    else:
        click.echo(replay_table(doc))
        click.echo("")
        click.echo(hosts_chart(doc))


def _days(days: str | None) -> list[str]:
    """--days: 'all' (every bundled day) or a comma-separated list."""
    from consolidator.app.replay import bundled_days

    if not days:
        return []
    if days.strip() == "all":
        return bundled_days()
    return [d.strip() for d in days.split(",") if d.strip()]


def _title(chosen: list[str], doc: dict[str, Any]) -> str:
    """The picture's title: the day, the sizes and the allocation ratio."""
    what = chosen[0] if chosen else "the trace"
    return (f"{what}: {doc['vms']:,} VMs on {plural(doc['hosts'], 'host')}, CPU allocation "
            f"ratio {doc['cpu_allocation_ratio']:g}, floor {doc['floor_kwh']:,.1f} kWh")


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
