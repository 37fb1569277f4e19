"""zoned-bestfit on mixed hardware: by default it chooses the hosts to empty by capacity and
population (the budget-aware search), and stays within 5 % or one host of the lower bound;
the paper's order (fewest instances first) is the named option order=paper."""

from __future__ import annotations

import pytest

from consolidator.core.algorithms.zoned_bestfit import DEFAULT_ORDER
from consolidator.core.planner import PlanSettings, plan_cluster
from consolidator.emulators.fake.generate import HOST_MODELS, generate
from consolidator.scenario.files import parse_scenario
from tests.unit.test_front import MIXED

#: The bound and peers keep no N+1 host: neither does the plan compared with them.
NO_N_PLUS_ONE = PlanSettings(n_plus_one=False)


@pytest.mark.parametrize("models,per_host,fill,seed", [
    (MIXED, 9.2, 0.6, 1), (MIXED, 9.2, 0.6, 2), (HOST_MODELS, 10, 0.5, 1),
    (HOST_MODELS, 10, 0.5, 2)])
def test_defaults_stay_within_five_percent_or_one_host_of_the_bound(
        models: list, per_host: float, fill: float, seed: int) -> None:
    cluster = parse_scenario(generate(60, per_host=per_host, seed=seed, fill=fill,
                                      models=models)).cluster
    default = plan_cluster(cluster, "zoned-bestfit", settings=NO_N_PLUS_ONE)
    paper = plan_cluster(cluster, "zoned-bestfit", settings=NO_N_PLUS_ONE,
                         options={"order": "paper"})
    assert DEFAULT_ORDER == "keep-set"
    assert default.hosts_after <= max(default.lower_bound * 1.05, default.lower_bound + 1)
    assert default.hosts_after < paper.hosts_after    # the paper's order keeps small hosts
