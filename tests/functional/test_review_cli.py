"""Four eyes and the audit trail from the local CLI: [review] require_approval refuses
'apply --yes', distinct_approver refuses the maker's own approval, the contradiction with
auto_apply is refused at start, and approve, cancel and an unapproved apply are journaled
with the OS user."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from consolidator.emulators.fake.cloud import FakeCloud
from consolidator.scenario.files import parse_scenario
from tests.functional.api_world import DOC, write_config
from tests.functional.cli import Result, run

pytestmark = pytest.mark.filterwarnings("ignore:::openstack.*")


class Local:
    """The CLI against an in-process fake cloud, with a config of the test's choosing."""

    def __init__(self, cloud: FakeCloud, tmp: Path) -> None:
        self.clouds = cloud.write_clouds_yaml(tmp / "clouds.yaml")
        self.tmp = tmp
        self.db_url = f"sqlite:///{tmp / 'review.db'}"
        self.config = write_config(tmp / "c.conf", executor={"poll_interval": 0.05})
        assert run("db", "upgrade", db_url=self.db_url).code == 0

    def review(self, **options: bool) -> None:
        write_config(self.config, executor={"poll_interval": 0.05}, review=options)

    def __call__(self, *args: str) -> Result:
        return run("--config", str(self.config), "--cloud", "fake", *args, db_url=self.db_url,
                   env={"OS_CLIENT_CONFIG_FILE": str(self.clouds)})

    def plan(self) -> str:
        made = self("plan", "-a", "firstfit", "--format", "id")
        assert made.code == 0, made.err
        return made.out.strip()

    def status(self, plan: str) -> str:
        return json.loads(self("plan", "show", plan, "-f", "json").out)["status"]

    def journal(self, action: str) -> list[dict]:
        found = self("journal", "--action", action, "-f", "json")
        assert found.code == 0, found.err
        return json.loads(found.out)


@pytest.fixture
def local(tmp_path: Path) -> Iterator[Local]:
    with FakeCloud(parse_scenario(DOC), migration_bandwidth_mb_s=1e6) as cloud:
        yield Local(cloud, tmp_path)


def test_require_approval_refuses_apply_yes_and_stores_nothing(local: Local) -> None:
    local.review(require_approval=True)
    plan = local.plan()
    refused = local("apply", plan, "--yes")
    assert refused.code == 1
    assert "require_approval" in refused.err and "nobody approved" in refused.err
    assert len(refused.err.strip().splitlines()) == 1
    assert local.status(plan) == "proposed"
    assert local.journal("approve") == []


def test_apply_yes_without_approval_is_journaled_as_such(local: Local) -> None:
    plan = local.plan()
    applied = local("apply", plan, "--yes")
    assert applied.code == 0, applied.err
    (row,) = local.journal("approve")
    assert row["params"]["unapproved"] is True and "nobody approved it" in row["result"]
    assert row["params"]["actor"]["kind"] == "os" and "@" in row["operator"]


def test_distinct_approver_refuses_the_makers_approval(local: Local) -> None:
    local.review(distinct_approver=True)
    plan = local.plan()
    refused = local("plan", "approve", plan)
    assert refused.code == 1 and "distinct_approver" in refused.err, refused.err
    assert local.status(plan) == "proposed"
    cancelled = local("plan", "cancel", plan)
    assert cancelled.code == 0, cancelled.err
    (row,) = local.journal("cancel")
    assert row["target"] == plan and row["operator"] in row["result"]


def test_approve_is_a_journal_action_naming_the_os_user(local: Local) -> None:
    plan = local.plan()
    assert local("plan", "approve", plan).code == 0
    (row,) = local.journal("approve")
    assert row["plan_id"] == plan and row["params"]["actor"]["kind"] == "os"


def test_require_approval_with_auto_apply_is_refused_at_start(local: Local) -> None:
    write_config(local.config, daemon={"auto_apply": True}, review={"require_approval": True})
    for args in (("daemon", "--once"), ("plans", "list")):
        refused = local(*args)
        assert refused.code == 1, refused
        assert "require_approval" in refused.err and "auto_apply" in refused.err
        assert "nobody's approval" in refused.err
