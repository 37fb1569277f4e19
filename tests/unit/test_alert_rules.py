"""The shipped Prometheus rules (consolidator/deploy/prometheus/), checked and unit-tested by
Prometheus's own promtool (Debian's prometheus package installs it): each alert fires on the
series that mean its trouble, and stays quiet on a healthy pair of daemons."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from consolidator.app.shipped import DEPLOY

RULES = DEPLOY / "prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"
JOB = {"job": "consolidator"}


@pytest.fixture(scope="module")
def promtool() -> str:
    if not Path(PROMTOOL).exists():
        pytest.fail("promtool is missing: install Debian's prometheus package "
                    "(apt-get install prometheus), as README's test set-up does")
    return PROMTOOL


def series(name: str, values: str, instance: str = "a:9", **labels: str) -> dict[str, str]:
    pairs = {**JOB, "instance": instance, **labels}
    text = ",".join(f'{k}="{v}"' for k, v in sorted(pairs.items()))
    return {"series": f"{name}{{{text}}}", "values": values}


def annotations(name: str, labels: dict[str, str], value: str) -> dict[str, str]:
    """The rule's annotations as Prometheus renders them for these labels and this value
    (the few template forms the rules use)."""
    doc = yaml.safe_load((RULES / "alert-rules.yml").read_text())
    rule = next(r for g in doc["groups"] for r in g["rules"] if r.get("alert") == name)
    rendered = {}
    for key, text in rule["annotations"].items():
        text = re.sub(r"\{\{ \$value( \| humanizeDuration)? \}\}", value, text)
        text = re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m.group(1)], text)
        rendered[key] = text
    return rendered


def alert(name: str, at: str, *expected: dict[str, str], value: str = "") -> dict[str, Any]:
    return {"eval_time": at, "alertname": name, "exp_alerts": [
        {"exp_labels": {**JOB, **labels},
         "exp_annotations": annotations(name, {**JOB, **labels}, value)}
        for labels in expected]}


def healthy(minutes: int = 200) -> list[dict[str, str]]:
    """Two daemons, one leading, a cycle ending every hour, nothing failing."""
    stamps = " ".join(str(60 * 60 * (m // 60)) for m in range(0, minutes, 1))
    both = []
    for instance, leader in (("a:9", "1"), ("b:9", "0")):
        both += [series("consolidator_build_info", f"1x{minutes}", instance, version="1.0",
                        python="3.11"),
                 series("consolidator_leader", f"{leader}x{minutes}", instance),
                 series("consolidator_last_cycle_timestamp_seconds", stamps, instance),
                 series("consolidator_hosts_off_holding_work", f"0x{minutes}", instance),
                 series("consolidator_shutdowns_overdue", f"0x{minutes}", instance)]
    return both


def run_tests(promtool: str, tmp_path: Path, tests: list[dict[str, Any]]) -> None:
    spec = {"rule_files": [str(RULES / "alert-rules.yml")], "evaluation_interval": "1m",
            "tests": tests}
    path = tmp_path / "alert-rules.test.yml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    done = subprocess.run([promtool, "test", "rules", str(path)], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_the_rule_files_pass_promtools_check(promtool: str) -> None:
    for name in ("alert-rules.yml", "recording-rules.yml"):
        done = subprocess.run([promtool, "check", "rules", str(RULES / name)],
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stdout + done.stderr


def test_a_healthy_pair_raises_no_alert(promtool: str, tmp_path: Path) -> None:
    quiet = [alert(name, "190m") for name in (
        "ConsolidatorNoCycle", "ConsolidatorNeverCycled", "ConsolidatorPlanFailed",
        "ConsolidatorHostOffHoldingWork", "ConsolidatorLeaseLost",
        "ConsolidatorNotificationsDropped", "ConsolidatorNoLeader",
        "ConsolidatorShutdownOverdue")]
    counters = [series(f"consolidator_{name}", "0x200", instance, **labels)
                for instance in ("a:9", "b:9") for name, labels in (
                    ("runs_total", {"kind": "plan", "result": "failed"}),
                    ("leases_lost_total", {"lease": "daemon"}),
                    ("notifications_dropped_total", {"reason": "deadline"}))]
    run_tests(promtool, tmp_path, [{"interval": "1m", "input_series": healthy() + counters,
                                    "alert_rule_test": quiet}])


def test_no_cycle_in_two_hours(promtool: str, tmp_path: Path) -> None:
    stale = [s for s in healthy() if "last_cycle" not in s["series"]] + [
        series("consolidator_last_cycle_timestamp_seconds", "600x200", i)
        for i in ("a:9", "b:9")]
    never = [s for s in healthy() if "last_cycle" not in s["series"]]
    run_tests(promtool, tmp_path, [
        {"interval": "1m", "input_series": stale,
         "alert_rule_test": [alert("ConsolidatorNoCycle", "120m"),
                             alert("ConsolidatorNoCycle", "140m", {"severity": "warning"},
                                   value="2h 10m 0s")]},
        {"interval": "1m", "input_series": never,
         "alert_rule_test": [alert("ConsolidatorNeverCycled", "100m"),
                             alert("ConsolidatorNeverCycled", "130m",
                                   {"severity": "warning"})]}])


def test_a_failed_plan_a_lost_lease_and_dropped_notifications(promtool: str,
                                                             tmp_path: Path) -> None:
    bumped = "0x30 1x60"          # one event at minute 31, on both daemons' exports
    inputs = healthy() + [
        series(f"consolidator_{name}", bumped, instance, **labels)
        for instance in ("a:9", "b:9") for name, labels in (
            ("runs_total", {"kind": "rollback", "result": "failed"}),
            ("leases_lost_total", {"lease": "executor"}),
            ("notifications_dropped_total", {"reason": "deadline"}))]
    run_tests(promtool, tmp_path, [{"interval": "1m", "input_series": inputs,
                                    "alert_rule_test": [
        alert("ConsolidatorPlanFailed", "20m"),
        alert("ConsolidatorPlanFailed", "35m", {"severity": "warning", "kind": "rollback"}),
        alert("ConsolidatorPlanFailed", "80m"),
        alert("ConsolidatorLeaseLost", "35m", {"severity": "warning", "lease": "executor"}),
        alert("ConsolidatorNotificationsDropped", "35m",
              {"severity": "warning", "reason": "deadline"}),
        alert("ConsolidatorNotificationsDropped", "80m")]}])


def test_a_host_off_holding_work_and_no_leader(promtool: str, tmp_path: Path) -> None:
    inputs = [s for s in healthy() if "holding_work" not in s["series"]
              and "leader" not in s["series"]] + [
        series("consolidator_hosts_off_holding_work", "0x10 2x100", "a:9"),
        series("consolidator_hosts_off_holding_work", "0x110", "b:9"),
        series("consolidator_leader", "1x10 0x100", "a:9"),
        series("consolidator_leader", "0x110", "b:9")]
    run_tests(promtool, tmp_path, [{"interval": "1m", "input_series": inputs,
                                    "alert_rule_test": [
        alert("ConsolidatorHostOffHoldingWork", "5m"),
        alert("ConsolidatorHostOffHoldingWork", "15m", {"severity": "critical"}, value="2"),
        alert("ConsolidatorNoLeader", "15m"),
        alert("ConsolidatorNoLeader", "30m", {"severity": "warning"})]}])


def test_a_shutdown_pending_past_power_timeout(promtool: str, tmp_path: Path) -> None:
    inputs = [s for s in healthy() if "overdue" not in s["series"]] + [
        series("consolidator_shutdowns_overdue", "0x10 1x20 0x80", "a:9"),
        series("consolidator_shutdowns_overdue", "0x10 1x20 0x80", "b:9")]
    run_tests(promtool, tmp_path, [{"interval": "1m", "input_series": inputs,
                                    "alert_rule_test": [
        alert("ConsolidatorShutdownOverdue", "5m"),
        alert("ConsolidatorShutdownOverdue", "15m", {"severity": "warning"}, value="1"),
        alert("ConsolidatorShutdownOverdue", "60m")]}])
