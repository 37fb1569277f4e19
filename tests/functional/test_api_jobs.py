"""Jobs and the people's journal rows beside the executor's: a request through the API or
an approval journaled while a plan runs does not overtake it (only an operator's action on
the cloud does), and a job is claimed once."""

from __future__ import annotations

from pathlib import Path

from consolidator.app.context import AppContext
from consolidator.app.interrupted import overtaken
from consolidator.app.jobs import request_job
from consolidator.core.actor import Actor
from consolidator.store import jobs, journal
from consolidator.store.db import make_engine, upgrade
from consolidator.store.plans import set_status
from tests.functional.api_world import DOC


def context(tmp: Path) -> AppContext:
    engine = make_engine(f"sqlite:///{tmp / 'jobs.db'}")
    upgrade(engine)
    from consolidator.app.config import Config

    return AppContext.of(config=Config(values={}), engine=engine, connect=lambda: None,
                         cloud="fake")


def running_plan(ctx: AppContext, tmp: Path) -> tuple[str, str]:
    """A plan of a scenario, running: its id and its cloud."""
    import yaml

    from consolidator.app.planning import PlanRequest, make_plan
    from consolidator.app.snapshots import record_scenario

    scenario = tmp / "s.yaml"
    scenario.write_text(yaml.safe_dump(DOC))
    plan = make_plan(ctx, record_scenario(ctx, str(scenario)), PlanRequest(algorithm="firstfit"))
    set_status(ctx.engine(), plan.id, "approved")
    set_status(ctx.engine(), plan.id, "running")
    return plan.id, plan.cloud


def test_requests_through_the_api_do_not_overtake_a_running_plan(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    plan, cloud = running_plan(ctx, tmp_path)
    ctx.actor = Actor(kind="keystone", user_id="u1", user_name="operator", roles=("member",))
    request_job(ctx, cloud=cloud, kind="snapshot", target=cloud, params={})
    request_job(ctx, cloud=cloud, kind="power_on", target="c2", params={})
    assert overtaken(ctx, plan) is None
    # an operator's own action on the cloud still does
    journal.record(ctx.engine(), cloud=cloud, plan_id=None, action="power_on", target="c2",
                   state=journal.SUCCEEDED, result="on")
    assert overtaken(ctx, plan) == "overtaken by an operator's power_on of c2"


def test_a_job_is_claimed_once(tmp_path: Path) -> None:
    ctx = context(tmp_path)
    job = request_job(ctx, cloud="fake", kind="snapshot", target="fake", params={})
    first = jobs.claim_next(ctx.engine(), cloud="fake", holder="a")
    assert first is not None and first.id == job.id and first.state == jobs.RUNNING
    assert jobs.claim_next(ctx.engine(), cloud="fake", holder="b") is None
    assert jobs.claim_next(ctx.engine(), cloud="other", holder="b") is None
