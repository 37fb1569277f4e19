"""python-openstackclient with osc-placement against the real Nova and Placement: they
still answer as recorded in REAL, which tests/functional/test_openstack_client.py holds the
fake to (tests/functional/osc_answers.py asks the questions). The fake and Nova thus answer
alike, each asked once."""

from __future__ import annotations

import json
from pathlib import Path

from tests.functional.osc_answers import Client, answers, migrate_b0, scenario
from tests.functional.test_openstack_client import REAL
from tests.realnova.served import served_nova


def test_the_real_nova_answers_openstack_commands_as_recorded(tmp_path: Path) -> None:
    with served_nova(scenario(), tmp_path) as nova:
        osc = Client(nova)
        migrate_b0(osc)
        seen = answers(osc)
    (tmp_path / "answers.json").write_text(json.dumps(seen, indent=1, default=str))
    assert set(seen) == set(REAL)
    differ = {q: (REAL[q], real) for q, real in seen.items() if REAL[q] != real}
    assert not differ, "recorded != nova: " + json.dumps(differ, default=str)
