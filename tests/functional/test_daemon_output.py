"""What the daemon prints: no Python dicts, and routine events at INFO, not WARNING."""

from __future__ import annotations

import re
from pathlib import Path

from tests.functional.cli import run
from tests.functional.served import served_cloud
from tests.functional.test_daemon import scenario


def test_daemon_once_prints_no_dicts_and_logs_routine_events_at_info(tmp_path: Path) -> None:
    """A cycle that proposes a plan, then one that applies it: nothing to warn about."""
    doc = {**scenario(), "settings": {"migration_bandwidth_mb_s": 1e6,
                                      "service_up_delay_s": 0.1, "bmc_graceful_delay_s": 0.05}}
    db_url = f"sqlite:///{tmp_path / 'c.db'}"
    with served_cloud(doc, tmp_path) as served:
        env = {"OS_CLIENT_CONFIG_FILE": str(served.clouds_yaml),
               "CONSOLIDATOR_BMC_FILE": str(served.bmc_yaml)}
        assert run("db", "upgrade", db_url=db_url).code == 0
        printed = []
        for auto in ("false", "true"):
            config = tmp_path / f"{auto}.conf"
            config.write_text(f"[daemon]\nauto_apply = {auto}\n[executor]\npoll_interval = "
                              f"0.05\n[padding]\n00:00-24:00 = 1\n")
            once = run("--config", str(config), "--cloud", served.cloud_name, "daemon",
                       "--once", db_url=db_url, env=env, timeout=180)
            assert once.code == 0, once.out + once.err
            printed.append(once.out + once.err)
    proposed, applied = printed
    assert re.search(r" INFO consolidator\.daemon: plan \S+ proposed", proposed), proposed
    assert "applied:" in applied
    for text in printed:
        assert not re.search(r"\{'|': \d", text), text          # a Python dict's repr
        assert " WARNING " not in text, text
        assert re.search(r"hosts: \d+ active, \d+ spare, \d+ powered off", text), text
