"""The trace replay's simulated BMCs pass the executor's BMC pre-flight: each reaches its own
host's system and its entry names it, so only the targets' BMCs are read."""

from __future__ import annotations

from consolidator.core.replay.cloud_model import replay_hosts
from consolidator.core.replay.datacentre import cloudsim_datacentre
from consolidator.execution.bmc_preflight import preflight
from consolidator.execution.replay_cloud import ReplayBmc


def test_replay_bmcs_pass_the_preflight_reading_only_the_targets() -> None:
    hosts = list(replay_hosts(cloudsim_datacentre(6)))
    bmcs = {h.name: ReplayBmc(h) for h in hosts}
    read: list[str] = []

    def lookup(name: str) -> ReplayBmc:
        read.append(name)
        return bmcs[name]

    assert preflight(lookup, hosts[:2], hosts) == {}
    assert read == [hosts[0].name, hosts[1].name]
    assert len({b.identity()["uuid"] for b in bmcs.values()}) == len(hosts)
