"""A rescue outside a plan is an event too (issue 48): 'hosts power off' whose power-off must
not stand (here c3's BMC entry reaches c1's system, so c1's nova-compute goes silent) powers
that system on again, and a consumer on a real RabbitMQ (tests/functional/rabbit.py) and the
webhook both get ``consolidation.host.rescue`` after the failed ``host.power_off``, each
payload valid against its shipped schema."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from consolidator.app import power
from consolidator.app.config import config_from_sections
from consolidator.app.context import AppContext
from consolidator.core.errors import ConsolidatorError
from consolidator.power.bmc_file import load_bmc_file
from consolidator.power.catalog import driver_for
from consolidator.store import journal
from consolidator.telemetry.versioned import schema
from tests.functional.bus_consumer import consuming
from tests.functional.rabbit import broker_url
from tests.functional.test_executor import fake_bed
from tests.functional.test_notifications import SECRET, receiver
from tests.functional.test_power_safety import lease_scenario, miswire
from tests.functional.waits import wait_until

pytestmark = pytest.mark.slow

HOST_EVENTS = ["consolidation.host.power_off", "consolidation.host.rescue"]


def test_a_rescue_by_hosts_power_off_is_told_on_the_bus_and_the_webhook(
        tmp_path: Path) -> None:
    topic = f"versioned_notifications_{uuid.uuid4().hex[:8]}"
    doc = lease_scenario()
    doc["settings"] = {}
    with broker_url() as url, consuming(url, topic) as consumer, \
            receiver() as (hook, hook_url), fake_bed(tmp_path, doc) as bed:
        miswire(bed, "c3", "c1", identity=False, drop=("c1",))
        path = bed.cloud.write_bmc_yaml(tmp_path / "bmc.yaml")
        path.chmod(0o600)
        configs = load_bmc_file(path)
        config = config_from_sections({
            "planner": {"n_plus_one": "false"},
            "notify": {"transport_url": url, "topic": topic, "webhook_url": hook_url,
                       "secret": SECRET, "backoff": "0.05"}})
        ctx = AppContext.of(config=config, engine=bed.engine, connect=bed.cloud.connect,
                            power=lambda h: driver_for(configs[h]) if h in configs else None)
        try:
            with pytest.raises(ConsolidatorError, match="reaches another"):
                power.power_off(ctx, "c3", force=True, confirm=lambda _q: True)
        finally:
            ctx.close()                 # the outbox delivers what waits, then ends
        assert bed.cloud.power("c1") == "on"
        rescue_row = [e for e in journal.entries(bed.engine) if e.action == "power_on"
                      and e.target == "c3" and (e.params or {}).get("rescue")]
        assert len(rescue_row) == 1 and rescue_row[0].plan_id is None

        # Every event the command journaled was delivered before close() returned; wait for
        # them all to reach the consumer, then look at what they are.
        told = [e for e in journal.entries(bed.engine) if e.action == "notify"]
        assert told and all(e.state == journal.SUCCEEDED for e in told)
        wait_until(lambda: len(consumer.unique()) >= len(told), "every event on the bus")
        assert consumer.invalid == []
        got = consumer.unique()
        assert [r.event_type for r in got] == HOST_EVENTS
        assert [r.priority for r in got] == ["ERROR", "INFO"]
        rescued = got[1].data
        assert (rescued["host"], rescued["action"], rescued["state"], rescued["plan_id"]) == \
            ("c3", "rescue", "succeeded", None)
        assert "reaches another" in rescued["reason"]
        assert rescued["sequence"] > got[0].sequence

        assert [e["type"] for e in hook.events] == HOST_EVENTS
        validator = Draft202012Validator(schema("HostPayload"),
                                         format_checker=Draft202012Validator.FORMAT_CHECKER)
        for event in hook.events:
            assert list(validator.iter_errors(event["data"])) == []
        assert hook.events[1]["subject"] == "c3"
        assert hook.events[1]["data"] == got[1].payload
