"""hosts list with BMCs that do not answer (issue 27): read all at once with a short
timeout, 'unknown' with the reason under --long, and no WARNING lines without -v."""

from __future__ import annotations

import json
from pathlib import Path

from tests.functional.served import served_cloud
from tests.functional.test_apply_cli import operator_for, scenario


def test_unanswering_bmcs_show_unknown_at_once_and_quietly(tmp_path: Path) -> None:
    with served_cloud(scenario(bandwidth=1e6), tmp_path) as served:
        op = operator_for(served, tmp_path)
        served.add_fault([{"type": "bmc_unreachable", "host": "c1"},
                          {"type": "bmc_unreachable", "host": "c2"}])
        listed = op("hosts", "list")
        assert listed.code == 0, listed.err
        power = {line.split()[0]: line.split()[2] for line in listed.out.splitlines()[2:]}
        assert power == {"c1": "unknown", "c2": "unknown", "c3": "on", "c4": "on"}
        assert "WARNING" not in listed.err and "Traceback" not in listed.err
        assert listed.err.strip() == ("power unknown for c1, c2: --long shows why "
                                      "(POWER ERROR)")
        rows = {r["host"]: r for r in json.loads(op("hosts", "list", "-f", "json").out)}
        # the listing gave up after its own short wait, not the BMCs' 30 s x 3 tries
        assert rows["c1"]["power_error"] == "no answer in 5 s"
        assert rows["c3"]["power_error"] is None
        wide = op("hosts", "list", "--long", "-c", "host", "-c", "power error")
        assert "c2    no answer in 5 s" in wide.out
