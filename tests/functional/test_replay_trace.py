"""'consolidator simulate trace': the shipped sample through the daemon's own cycle and the
reference policies; the daemon's configuration decides what the consolidator policy does."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from consolidator.app.config import load_config
from consolidator.app.context import AppContext
from consolidator.app.replay import run_policy
from consolidator.core.replay.datacentre import cloudsim_datacentre
from consolidator.core.replay.trace import Trace
from consolidator.scenario.traces import load_planetlab
from tests.functional.cli import run

SAMPLE = Path(__file__).resolve().parents[2] / "consolidator/data/planetlab-sample/20110303-50"
KEYS = {"policy", "energy_kwh", "slatah", "slatah_cloudsim", "pdm", "slav", "esv",
        "migrations", "hosts_on_mean", "hosts_used", "time_over"}


def _hours(trace: Trace, hours: int) -> Trace:
    steps = hours * 12
    return Trace(trace.names, trace.utilisation[:, :steps], trace.mips, trace.ram_mb)


def _replay(tmp_path: Path, config: str, name: str) -> object:
    path = tmp_path / f"{name}.conf"
    path.write_text(config)
    ctx = AppContext(_config=load_config(str(path), required=True))
    trace = _hours(load_planetlab(SAMPLE), 4)
    # Placement overcommitted enough (16 x the cores) that the usage, not the flavors, binds
    dc = replace(cloudsim_datacentre(40), cpu_allocation_ratio=16.0)
    return run_policy(trace, dc, "consolidator", ctx)


@pytest.mark.parametrize("changed", [
    "[planner]\nalgorithm = firstfit\ncapacity_model = ucac\n",
    "[planner]\nalgorithm = zoned-bestfit\ncapacity_model = ucac\nconfidence = 0.9\n",
    "[planner]\nspare = 3\n",
], ids=["algorithm", "confidence", "padding"])
def test_a_change_to_the_daemons_config_changes_the_replay(tmp_path: Path,
                                                          changed: str) -> None:
    """The consolidator policy plans with the config: its algorithm, its capacity model and
    confidence, its spare hosts, each change what the replay measures."""
    base = "[planner]\nalgorithm = zoned-bestfit\ncapacity_model = ucac\nconfidence = 0.999\n"
    before = _replay(tmp_path, base, "base")
    after = _replay(tmp_path, changed if "ucac" in changed or "algorithm" in changed
                    else base + "spare = 3\n", "changed")
    assert before.migrations > 0
    assert (after.energy_kwh, after.migrations, after.hosts_on) != \
        (before.energy_kwh, before.migrations, before.hosts_on)


def test_the_daemons_plans_run_through_the_executor(tmp_path: Path) -> None:
    """Hosts the plans empty are powered off by the executor: the consolidator policy ends
    with fewer hosts on than it started with, and every VM still on a host."""
    result = _replay(tmp_path, "[planner]\nalgorithm = zoned-bestfit\ncapacity_model = ucac\n",
                     "ucac")
    assert result.hosts_on[0] < 40
    assert min(result.hosts_on) >= 1
    assert result.notes and "daemon cycles" in result.notes[0]


def test_simulate_trace_on_the_sample_prints_the_json_contract() -> None:
    out = run("simulate", "trace", "--hosts", "40", "--policy", "npa", "--policy",
              "lr-mmt-1.2", "--format", "json")
    assert out.code == 0, out.err
    doc = json.loads(out.out)
    assert set(doc) == {"floor_kwh", "allocation_floor_kwh", "hosts", "vms", "steps",
                        "policies", "series"}
    assert doc["floor_kwh"] <= doc["allocation_floor_kwh"]
    assert (doc["hosts"], doc["vms"], doc["steps"]) == (40, 50, 288)
    assert [p["policy"] for p in doc["policies"]] == ["npa", "lr-mmt-1.2"]
    assert all(set(p) == KEYS for p in doc["policies"])
    npa, lr = doc["policies"]
    assert npa["energy_kwh"] == pytest.approx(40 * 126 * 24 / 1000)
    assert doc["floor_kwh"] <= lr["energy_kwh"] < npa["energy_kwh"]


def test_simulate_trace_prints_a_table_and_a_chart(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    rows = ["name,mips,ram_mb" + ",cpu" * 24]
    rows += [f"vm{i},1000,1024," + ",".join(str(int(x)) for x in
                                            np.linspace(10, 60, 24)) for i in range(6)]
    trace.write_text("\n".join(rows) + "\n")
    out = run("simulate", "trace", "--trace", str(trace), "--hosts", "4", "--policy", "npa",
              "--policy", "thr-mmt-0.8")
    assert out.code == 0, out.err
    assert "physical floor" in out.out and "thr-mmt-0.8" in out.out
    assert "hosts on over the trace" in out.out


@pytest.mark.parametrize("args, message", [
    (("--planetlab", "/nonexistent"), "not a folder of PlanetLab files nor a bundled day"),
    (("--policy", "mad-mmt-2.5"), "unknown policy"),
    (("--hosts-file", "/nonexistent.yaml"), "No such file"),
])
def test_bad_input_is_one_line(args: tuple[str, ...], message: str) -> None:
    out = run("simulate", "trace", *args)
    assert out.code != 0
    assert message in out.err and "Traceback" not in out.err
    assert len(out.err.strip().splitlines()) <= 2


def small_replay(path: Path, config: str, util: np.ndarray) -> tuple[Any, Any]:
    """(result, policy) of the consolidator policy (zoned-bestfit under ucac, then `config`)
    replaying twelve VMs with the utilisation rows `util` on 8 of CloudSim's hosts."""
    from consolidator.app.replay import make_policy, replay_context
    from consolidator.core.replay.policy import replay
    from consolidator.store.journal import entries

    path.write_text(f"[planner]\nalgorithm = zoned-bestfit\ncapacity_model = ucac\n{config}")
    ctx, scratch = replay_context(AppContext(_config=load_config(str(path), required=True)))
    trace = Trace(tuple(f"vm{i:02d}" for i in range(12)), util, np.full(12, 1000.0),
                  np.full(12, 870.0))
    policy = make_policy("consolidator", ctx)
    try:
        result = replay(trace, cloudsim_datacentre(8), policy)
        policy.journaled = entries(ctx.engine(), actions=("migrate",))   # type: ignore
        return result, policy
    finally:
        ctx.engine(migrated=False).dispose()
        scratch.cleanup()


def test_the_capacity_watch_powers_a_host_on_between_cycles_when_demand_rises(
        tmp_path: Path) -> None:
    """The daemon's capacity watch (app/cycle.py) runs at its interval on the replay's clock:
    the 00:00 cycle packs twelve idle VMs and powers hosts off; at 00:20 their demand jumps,
    and the watch powers hosts on before the 01:00 cycle (relief is off, so only the watch
    can)."""
    util = np.full((12, 12), 0.9)
    util[:, :4] = 0.05
    result, policy = small_replay(tmp_path / "watch.conf", "[relief]\ninterval = 0\n", util)
    assert policy.cycles == 1 and policy.watches == 11
    assert result.hosts_on[3] < 8                      # the cycle powered hosts off
    assert policy.watched                              # the watch powered some on ...
    assert max(result.hosts_on[4:]) > result.hosts_on[3]   # ... after the jump, before 01:00
    assert "by the capacity watch" in result.notes[0]


def test_every_migration_the_executor_starts_counts_in_the_replay(tmp_path: Path) -> None:
    """The consolidator row's migrations are the executor's, one per live migration in the
    journal (a VM a cycle packs and relief moves back counts twice), not the net change of
    the VMs' hosts between samples."""
    rng = np.random.default_rng(1)
    util = np.full((12, 36), 0.05)      # quiet, with a burst before each hourly cycle ...
    util[:, 11:13] = rng.uniform(0.3, 1.0, size=(12, 2))
    util[:, 23:25] = rng.uniform(0.3, 1.0, size=(12, 2))
    # ... which the cycle packs on the hour's statistics and relief (the last sample) undoes
    config = "[relief]\ncpu_mean_query = avg_over_time(x[5m])\n[telemetry]\nhistory = 0\n"
    result, policy = small_replay(tmp_path / "count.conf", config, util)
    started = [e for e in policy.journaled if e.state in ("succeeded", "failed")]
    assert started and result.migrations == len(started)


def test_the_first_cycle_plans_its_one_sample_with_the_short_window_prior(
        tmp_path: Path) -> None:
    """The day's first cycle sees one sample per VM, a deviation of 0: with [telemetry]
    min_samples (default 12) it plans with each VM's mean as its deviation, as the daemon
    does on a fresh Prometheus, and keeps more hosts on than without the prior."""
    rng = np.random.default_rng(3)
    util = np.repeat(rng.uniform(0.5, 0.9, size=(12, 1)), 12, axis=1)
    quiet = "[relief]\ninterval = 0\n[daemon]\ncapacity_watch_interval = 0\n"
    guarded, policy = small_replay(tmp_path / "prior.conf", quiet, util)
    mean, std = policy.usage                                 # type: ignore[attr-defined]
    assert policy.cycles == 1 and (std == mean).all() and (mean > 0).all()
    bare, policy = small_replay(tmp_path / "bare.conf", quiet + "[telemetry]\nmin_samples = 0\n",
                                util)
    assert (policy.usage[1] == 0).all()                     # type: ignore[attr-defined]
    assert guarded.hosts_on[0] > bare.hosts_on[0]


def test_a_cycle_sooner_than_min_samples_after_the_last_reads_min_samples_of_history(
        tmp_path: Path) -> None:
    """With cycles every 30 minutes (6 samples apart), a cycle once the trace holds
    [telemetry] min_samples (12) reads the last 12 samples, as the daemon's Prometheus
    windows ([7d]) would, not only the 6 since the previous cycle: the prior is for a short
    history, not for a frequent schedule. Steady VMs then plan with their own deviation, 0."""
    rng = np.random.default_rng(5)
    util = np.repeat(rng.uniform(0.2, 0.6, size=(12, 1)), 24, axis=1)
    quiet = ("[relief]\ninterval = 0\n[daemon]\ncapacity_watch_interval = 0\n"
             "schedule = */30 * * * *\n")
    _, policy = small_replay(tmp_path / "half-hourly.conf", quiet, util)
    mean, std = policy.usage                                 # type: ignore[attr-defined]
    assert policy.cycles == 4 and (mean > 0).all()           # 00:00, 00:30, 01:00, 01:30
    assert (std < 1e-9 * mean).all()                         # not the prior (std = mean)


def watched_then_idle(tmp_path: Path, min_on_time: int) -> tuple[np.ndarray, object]:
    """Hosts on per sample of a 2-hour replay: idle VMs packed at 00:00, their demand jumps at
    00:20 (the capacity watch powers hosts on) and falls at 00:45; the 01:00 cycle plans on the
    quiet hour after, under [power] min_on_time."""
    util = np.full((12, 24), 0.05)
    util[:, 4:9] = 0.9
    result, policy = small_replay(
        tmp_path / f"cool-{min_on_time}.conf",
        f"[relief]\ninterval = 0\n[power]\nmin_on_time = {min_on_time}\n"
        "[telemetry]\nhistory = 0\n", util)
    return np.asarray(result.hosts_on), policy


def test_the_power_cool_down_holds_on_the_replays_clock(tmp_path: Path) -> None:
    """The cool-down reads the journal's power actions; the replay's journal rows carry the
    replay's clock, so a host the watch powered on at 00:25 is held at 01:00 by a min_on_time
    of 2 hours and powered off without one."""
    held, policy = watched_then_idle(tmp_path, 7200)
    free, _ = watched_then_idle(tmp_path, 0)
    assert policy.watched and policy.cycles == 2
    assert held[11] == free[11]                  # the same until the 01:00 cycle
    assert free[12:].max() < free[11]            # without: the cycle powers them off
    assert held[12:].min() >= held[11]           # with: they stay on


def test_the_consolidator_row_runs_cloudsims_workload_as_the_reference_rows_do(
        tmp_path: Path) -> None:
    """A VM ends at its first two zero samples in a row, as in CloudSim and in the
    reference rows: from then on it is gone from the cloud the daemon reads and plans (it
    is not packed, moved or counted), and the row says how many VMs ended."""
    util = np.full((12, 24), 0.5)
    util[:4, 6:8] = 0.0                 # four VMs end at sample 6
    result, policy = small_replay(tmp_path / "ends.conf", "", util)
    assert list(policy.ends[:4]) == [6] * 4 and (policy.ends[4:] > 24).all()
    seen = {i.name for i in policy.inventory().cluster.instances}
    assert seen == {f"vm{i:02d}" for i in range(4, 12)}
    assert (policy.placement[:4] == -1).all()
    assert any("4 of 12 VMs ended" in note for note in result.notes)


def test_a_trace_file_runs_every_vm_to_the_end_unless_asked_for_cloudsims_workload(
        tmp_path: Path) -> None:
    """An operator's idle VM is still there: a trace file (and a Prometheus history) runs
    the full workload by default; --workload cloudsim ends VMs as CloudSim does, in every
    row but npa, and the floor counts only the demand that runs."""
    trace = tmp_path / "idle.csv"
    rows = ["name,mips,ram_mb" + ",cpu" * 24]
    rows += [f"vm{i},1000,1024," + ",".join(["40"] * 24) for i in range(4)]
    rows += ["idle,1000,1024," + ",".join(["0", "0"] + ["90"] * 22)]
    trace.write_text("\n".join(rows) + "\n")
    args = ("simulate", "trace", "--trace", str(trace), "--hosts", "4", "--policy", "npa",
            "--policy", "lr-mmt-1.2", "--format", "json")
    full, cloudsim = run(*args), run(*args, "--workload", "cloudsim")
    assert full.code == 0 and cloudsim.code == 0, full.err + cloudsim.err
    full_doc, cloudsim_doc = json.loads(full.out), json.loads(cloudsim.out)
    assert cloudsim_doc["floor_kwh"] < full_doc["floor_kwh"]
    lr = {d["policy"]: d for d in full_doc["policies"]}["lr-mmt-1.2"]
    lr_ended = {d["policy"]: d for d in cloudsim_doc["policies"]}["lr-mmt-1.2"]
    assert lr_ended["energy_kwh"] < lr["energy_kwh"]        # the idle VM's 90 % is gone
    text = run(*args[:-2], "--workload", "cloudsim")
    assert "lr-mmt-1.2: as in CloudSim 3.0.3" in text.out and "1 of 5 VMs ended" in text.out
    assert "VMs ended" not in run(*args[:-2]).out


def test_the_replays_reliefs_run_the_daemons_relief_without_its_warnings() -> None:
    """The replay relieves through the daemon's relieve_now (at each [relief] interval and
    at each cycle's end); the overloads it finds are not logged line by line on stderr."""
    out = run("simulate", "trace", "--hosts", "40", "--policy", "consolidator")
    assert out.code == 0, out.err
    reliefs = int(out.out.split(" reliefs of overloaded hosts")[0].rsplit(" ", 1)[1])
    assert reliefs > 0
    assert "overloaded:" not in out.err and "relief plan" not in out.err


@pytest.mark.parametrize("suffix", [".svg", ".html", ".png"])
def test_simulate_trace_plot_draws_the_series_of_its_json(tmp_path: Path, suffix: str) -> None:
    """--plot writes the picture (hosts on, power and the floors, hosts overloaded,
    migrations per step, per policy); what it draws is the JSON output's series, whose sums
    are the table's energy, migrations and floor."""
    from tests.functional.plots import embedded_series

    picture = tmp_path / f"day{suffix}"
    out = run("simulate", "trace", "--hosts", "40", "--policy", "npa", "--policy",
              "lr-mmt-1.2", "--format", "json", "--plot", str(picture))
    assert out.code == 0, out.err
    doc = json.loads(out.out)
    series = embedded_series(picture)
    assert series == doc["series"]
    assert len(series["hours"]) == len(series["floor_kwh"]) == 288
    assert sum(series["floor_kwh"]) == pytest.approx(doc["floor_kwh"], abs=1e-3)
    assert len(series["allocation_floor_kwh"]) == 288
    assert sum(series["allocation_floor_kwh"]) == pytest.approx(doc["allocation_floor_kwh"],
                                                                abs=1e-3)
    for row in doc["policies"]:
        drawn = series["policies"][row["policy"]]
        assert sum(drawn["migrations"]) == row["migrations"]
        assert sum(drawn["energy_kwh"]) == pytest.approx(row["energy_kwh"], abs=1e-3)
        assert np.mean(drawn["hosts_on"]) == pytest.approx(row["hosts_on_mean"], abs=0.01)
        # SLATAH's N: at least the most hosts on at once, at most the data centre
        assert max(drawn["hosts_on"]) <= row["hosts_used"] <= doc["hosts"]
    assert max(series["policies"]["lr-mmt-1.2"]["overloaded"]) > 0


def test_plot_without_matplotlib_says_how_to_install_it(tmp_path: Path) -> None:
    """Without the [plot] extra, --plot is refused in one line, before any replay, and
    nothing is written."""
    import os

    stub = tmp_path / "stub" / "matplotlib"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('No module named matplotlib')\n")
    path = os.pathsep.join([str(stub.parent), os.environ.get("PYTHONPATH", "")])
    out = run("simulate", "trace", "--hosts", "40", "--plot", str(tmp_path / "day.svg"),
              env={"PYTHONPATH": path})
    assert out.code == 2
    assert out.err.strip().endswith("pip install 'consolidator[plot]'")
    assert len(out.err.strip().splitlines()) == 1 and not (tmp_path / "day.svg").exists()


def test_a_bundled_day_replays_by_name_and_several_days_give_the_medians() -> None:
    """--planetlab 20110303 is the bundled day (1,052 VMs; no folder beside the clone);
    --days replays several and prints each day's rows, with the floor, and the medians."""
    out = run("simulate", "trace", "--days", "20110303,20110420", "--vms", "40", "--hosts",
              "20", "--policy", "lr-mmt-1.2", "--format", "json")
    assert out.code == 0, out.err
    doc = json.loads(out.out)
    assert [r["day"] for r in doc["days"]] == ["20110303", "20110420"]
    assert {"floor_kwh", "x_floor", "slatah", "slatah_cloudsim"} <= set(doc["days"][0])
    median = doc["medians"][0]
    assert median["policy"] == "lr-mmt-1.2" and median["days"] == 2
    assert median["energy_kwh"] == pytest.approx(
        (doc["days"][0]["energy_kwh"] + doc["days"][1]["energy_kwh"]) / 2)
    text = run("simulate", "trace", "--planetlab", "20110303", "--planetlab", "20110420",
               "--vms", "40", "--hosts", "20", "--policy", "lr-mmt-1.2")
    assert text.code == 0 and "medians over 2 days" in text.out
    assert "SLATAH (CloudSim)" in text.out and "x floor" in text.out
    unknown = run("simulate", "trace", "--planetlab", "20990101")
    assert unknown.code == 2 and "20110303" in unknown.err
    assert len(unknown.err.strip().splitlines()) == 1


def test_the_cpu_allocation_ratio_is_what_the_daemons_placement_sees(tmp_path: Path) -> None:
    """--cpu-allocation-ratio replays an overcommitted cloud: at 1:1 Placement holds the
    consolidator row to the flavours, at 16:1 it packs further (fewer hosts on)."""
    args = ("simulate", "trace", "--vms", "20", "--hosts", "12", "--policy", "consolidator",
            "--format", "json")
    tight, loose = (json.loads(run(*args, "--cpu-allocation-ratio", ratio,
                                   timeout=600).out)["policies"][0] for ratio in ("1", "16"))
    assert loose["hosts_on_mean"] < tight["hosts_on_mean"]
