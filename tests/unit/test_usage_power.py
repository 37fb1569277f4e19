"""Usage-driven power (core/usage_power.py): the trend, the need, the cool-down."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest

from consolidator.core.constraints import UsageModel
from consolidator.core.model import Host
from consolidator.core.plan import PlanDraft
from consolidator.core.usage_power import (
    CoolDown,
    Need,
    hold_power_off,
    hosts_for_need,
    local_regression,
    need_of,
    predicted_rise,
)
from tests.unit.builders import cluster, vm

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=timezone.utc)


def test_local_regression_follows_a_rising_line_and_favours_the_newest_points() -> None:
    times = list(range(0, 600, 60))
    level, slope = local_regression(times, [10 + 0.01 * t for t in times])
    assert level == pytest.approx(10 + 0.01 * 540) and slope == pytest.approx(0.01)
    assert predicted_rise(times, [10 + 0.01 * t for t in times], 300) == pytest.approx(3.0)
    assert predicted_rise(times, [20 - 0.01 * t for t in times], 300) == 0.0   # falling
    assert predicted_rise([0, 60], [1, 5], 300) == 0.0                  # too few points
    # a late jump weighs more than the flat start
    jump = [10] * 7 + [12, 14, 16]
    _, slope = local_regression(times, jump)
    assert slope > float(np.polyfit(times, jump, 1)[0])


def test_the_need_counts_usage_at_confidence_on_the_powered_hosts_only() -> None:
    hosts = (Host("c1", 4, 8192, 100, cpu_allocation_ratio=4.0),
             Host("c2", 4, 8192, 100, cpu_allocation_ratio=4.0),
             Host("off", 8, 8192, 100, power="off", state="down", status="disabled"))
    c = cluster(hosts, [vm("a", "c1", 2, usage={"cpu_mean": 3.0, "cpu_std": 0.0}),
                        vm("b", "c2", 2, usage={"cpu_mean": 2.0, "cpu_std": 1.0})])
    need = need_of(c, UsageModel(confidence=0.99), rise=1.0, headroom=0.9)
    assert need.demand == pytest.approx(3.0 + 2.0 + 2.3263478740408408)
    assert need.capacity == 8.0
    assert need.short == pytest.approx(need.demand + 1.0 - 7.2)
    fast = need_of(c, UsageModel(confidence=0.99, speed={"c1": 2.0}))
    assert fast.capacity == 12.0 and fast.demand == pytest.approx(6.0 + 4.3263478740408408)


def test_the_need_sums_each_hosts_tail_or_pools_the_hosts_usage() -> None:
    """Two hosts, each with usage 2 +- 1: per host ([relief] watch_demand = hosts) (2 + z)
    x 2, every host at its tail at once, which is short of 0.95 x 8 cores; pooled (cloud,
    the default) 4 +- sqrt(2) at confidence, which is not."""
    hosts = tuple(Host(f"c{i}", 4, 8192, 100, cpu_allocation_ratio=4.0) for i in (1, 2))
    c = cluster(hosts, [vm(f"v{i}", f"c{i}", 2, usage={"cpu_mean": 2.0, "cpu_std": 1.0})
                        for i in (1, 2)])
    z = 2.3263478740408408
    per_host = need_of(c, UsageModel(confidence=0.99), headroom=0.95)
    assert per_host.demand == pytest.approx(2 * (2.0 + z))
    assert per_host.short == pytest.approx(2 * (2.0 + z) - 0.95 * 8)
    pooled = need_of(c, UsageModel(confidence=0.99), headroom=0.95, pooled=True)
    assert pooled.demand == pytest.approx(4.0 + z * np.sqrt(2.0))
    assert pooled.short == 0.0


def test_hosts_come_on_in_order_until_the_need_is_met() -> None:
    need = Need(demand=10.0, rise=2.0, capacity=10.0, headroom=0.9)    # short by 3
    assert hosts_for_need(need, ["a", "b", "c"], {"a": 2, "b": 2, "c": 8}) == ["a", "b"]
    assert hosts_for_need(Need(5, 0, 10, 0.9), ["a"], {"a": 2}) == []


def test_cool_down_holds_recent_power_ons_and_caps_actions_per_hour() -> None:
    rules = CoolDown(min_on_time_s=1800, max_per_hour=3)
    holds = rules.holds({"c1": NOW - timedelta(minutes=10), "c2": NOW - timedelta(hours=2)},
                        NOW)
    assert set(holds) == {"c1"} and "min_on_time" in holds["c1"]
    assert rules.budget([NOW - timedelta(minutes=m) for m in (5, 30, 90)], NOW) == 1
    assert CoolDown().budget([NOW], NOW) is None and CoolDown().holds({"c1": NOW}, NOW) == {}
    draft = PlanDraft(algorithm="firstfit", ranking=None, migrations=(),
                      power_off=("c1", "c3", "c4"), hosts_before=5, hosts_after=2,
                      lower_bound=2, migrations_lower_bound=0, spare=0)
    held = hold_power_off(draft, holds, budget=1)
    assert held.power_off == ("c3",) and set(held.left_on) == {"c1", "c4"}
    assert held.hosts_after == 4 and "max_actions_per_hour" in held.left_on["c4"]
    assert hold_power_off(draft, {}, None) is draft


def test_watch_demand_is_read_from_the_config_and_checked(tmp_path: Path) -> None:
    from consolidator.app.config import load_config
    from consolidator.app.settings import relief_settings
    from consolidator.core.errors import ConfigError

    assert relief_settings(load_config(None)).watch_demand == "cloud"
    conf = tmp_path / "c.conf"
    conf.write_text("[relief]\nwatch_demand = hosts\n")
    assert relief_settings(load_config(str(conf))).watch_demand == "hosts"
    conf.write_text("[relief]\nwatch_demand = pooled\n")
    with pytest.raises(ConfigError, match="watch_demand"):
        load_config(str(conf))
