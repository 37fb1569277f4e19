"""python-openstackclient with osc-placement against the fake cloud and the real Nova, on the
same scenario: the fake answers as Nova and Placement do (tests/functional/osc_answers.py)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.functional.osc_answers import Client, answers, migrate_b0, scenario
from tests.functional.served import served_cloud
from tests.realnova.served import served_nova


def test_the_fake_answers_openstack_commands_as_nova_does(tmp_path: Path) -> None:
    (tmp_path / "fake").mkdir()
    (tmp_path / "nova").mkdir()
    with served_cloud(scenario(), tmp_path / "fake") as fake, \
            served_nova(scenario(), tmp_path / "nova") as nova:
        seen = {}
        for name, served in (("fake", fake), ("nova", nova)):
            osc = Client(served)
            migrate_b0(osc)
            seen[name] = answers(osc)
    (tmp_path / "answers.json").write_text(json.dumps(seen, indent=1, default=str))
    differ = {q: (seen["fake"].get(q), real) for q, real in seen["nova"].items()
              if seen["fake"].get(q) != real}
    assert not differ, "fake != nova: " + json.dumps(differ, default=str)
