"""The replay's inputs: trace files (CSV, JSON), PlanetLab folders and host-model files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from consolidator.core.errors import MissingFileError, TraceFileError
from consolidator.core.replay.datacentre import G4, G5
from consolidator.scenario.traces import load_host_models, load_planetlab, load_trace_file

CLOUDSIM = {"interleave": True, "models": [
    {"name": "G4", "count": 2, "cores": 2, "mips": 1860, "memory_mb": 4096,
     "watts": list(G4.watts)},
    {"name": "G5", "count": 1, "cores": 2, "mips": 2660, "memory_mb": 4096,
     "watts": list(G5.watts)}]}


def test_a_csv_and_a_json_trace_read_the_same(tmp_path: Path) -> None:
    csv = tmp_path / "t.csv"
    csv.write_text("name,mips,ram_mb,cpu,cpu,cpu\nweb-1,2000,2048,12,15,40\n"
                   "db-1,4000,8192,55,60,58\n")
    doc = {"step_s": 300, "instances": [
        {"name": "web-1", "mips": 2000, "ram_mb": 2048, "cpu": [12, 15, 40]},
        {"name": "db-1", "mips": 4000, "ram_mb": 8192, "cpu": [55, 60, 58]}]}
    js = tmp_path / "t.json"
    js.write_text(json.dumps(doc))
    a, b = load_trace_file(csv), load_trace_file(js)
    assert a.names == b.names == ("web-1", "db-1")
    assert np.array_equal(a.utilisation, b.utilisation)
    assert a.utilisation[1, 1] == pytest.approx(0.6)
    assert list(a.mips) == [2000, 4000] and list(a.ram_mb) == [2048, 8192]


@pytest.mark.parametrize("name, text, why", [
    ("bad.csv", "vm,mips\nx,1\n", "the header must start name,mips,ram_mb"),
    ("bad.csv", "name,mips,ram_mb,cpu,cpu\na,100,10,5,6\nb,100,10,5\n",
     "line 3 has 4 fields, the header 5"),
    ("bad.csv", "name,mips,ram_mb,cpu,cpu\nweb-1,2000,2048,12\n",
     "line 2 has 4 fields, the header 5"),
    ("bad.csv", "name,mips,ram_mb,cpu\na,100,10,150\n", "between 0 and 100 %"),
    ("bad.csv", "name,mips,ram_mb,cpu\na,x,10,15\n", "line 2: mips is not a number ('x')"),
    ("bad.csv", "", "the file is empty"),
    ("bad.json", '{"step_s": 300, "instances": [{"name": "w", "mips": 2000}]}',
     "instance 1 has no 'cpu'"),
    ("bad.json", '{"instances": []}', "it lists no instances"),
    ("bad.json", '"instances": []', "not valid JSON (line 1: Extra data)"),
    ("bad.json", '[{"name": "w"}]', 'expected {"step_s": 300, "instances": [...]}'),
    ("bad.json", '{"instances": [{"name": "w", "mips": 1, "cpu": [null, 3]}]}',
     "instance 'w': CPU sample 1 is not a number (None)"),
    ("bad.json", '{"instances": [', "not valid JSON (line 1"),
])
def test_a_bad_trace_file_is_one_error(tmp_path: Path, name: str, text: str,
                                             why: str) -> None:
    """One line naming the file and what is wrong where, never Python's own words."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(TraceFileError, match=name) as caught:
        load_trace_file(path)
    assert caught.value.exit_code == 1      # a file's content: an operation that failed
    assert why in str(caught.value) and "not a trace file" in str(caught.value)
    assert "\n" not in str(caught.value) and "float()" not in str(caught.value)


def test_a_host_model_file_builds_the_data_centre(tmp_path: Path) -> None:
    path = tmp_path / "hosts.yaml"
    path.write_text(json.dumps(CLOUDSIM))
    dc = load_host_models(path)
    assert dc.hosts == 3 and list(dc.capacity) == [3720, 5320, 3720]
    assert dc.full_power_watts == 117 * 2 + 135


@pytest.mark.parametrize("change, why", [
    ({"watts": [1, 2]}, "watts needs 11"),
    ({"cores": 0}, "must be positive"),
    ({"mips": None}, "not a host-model file"),
])
def test_a_bad_host_model_is_one_error(tmp_path: Path, change: dict, why: str) -> None:
    doc = json.loads(json.dumps(CLOUDSIM))
    doc["models"][0].update(change)
    path = tmp_path / "hosts.yaml"
    path.write_text(json.dumps(doc))
    with pytest.raises(TraceFileError, match=why):
        load_host_models(path)


def test_a_missing_trace_or_host_model_file_is_a_usage_error(tmp_path: Path) -> None:
    """A file the command line names that does not exist exits 2; one that exists but holds
    no trace exits 1 (the exit-code contract of docs/operator-guide.rst)."""
    for load in (load_trace_file, load_host_models):
        with pytest.raises(MissingFileError) as caught:
            load(tmp_path / "absent.csv")
        assert caught.value.exit_code == 2


def test_a_planetlab_folder_takes_cloudsims_types_in_sorted_order(tmp_path: Path) -> None:
    for i, name in enumerate(["d", "a b", "c", "b"]):
        (tmp_path / name).write_text(f"{i * 10}\n{i * 10 + 1}\n")
    trace = load_planetlab(tmp_path)
    assert trace.names == ("a b", "b", "c", "d")
    assert list(trace.mips) == [2500, 2000, 1000, 500]
    assert trace.utilisation[0, 0] == pytest.approx(0.1)


def test_the_trace_file_docs_replay_shows_replays(tmp_path: Path) -> None:
    """docs/replay.rst's CSV example is a trace every policy can place (a VM larger than a
    host's core fits nowhere: its db-1 once asked for 4,000 MIPS on 2,660-MIPS cores)."""
    from consolidator.app.replay import run_policy
    from consolidator.core.replay.datacentre import cloudsim_datacentre

    text = (Path(__file__).resolve().parents[2] / "docs" / "replay.rst").read_text()
    block = text.split("name,mips,ram_mb,cpu,cpu,cpu", 1)[1].split("\n\n", 1)[0]
    csv = tmp_path / "t.csv"
    csv.write_text("name,mips,ram_mb,cpu,cpu,cpu\n" + "\n".join(
        line.strip() for line in block.splitlines() if line.strip()) + "\n")
    trace = load_trace_file(csv)
    assert trace.names == ("web-1", "db-1")
    result = run_policy(trace, cloudsim_datacentre(), "lr-mmt-1.2")
    assert result.energy_kwh > 0 and result.hosts_used >= 1
