"""Who asked: the actor of a context, and the journal rows that name people (approve,
cancel, a request through the API)."""

from __future__ import annotations

from typing import Any

from consolidator.app.context import AppContext
from consolidator.core.actor import Actor
from consolidator.store import journal


def actor_of(ctx: AppContext) -> Actor:
    """The context's actor: the Keystone user it was given, else this process's OS user."""
    if isinstance(ctx.actor, Actor):
        return ctx.actor
    return Actor(kind="os", user_id=journal.operator())


def journal_decision(ctx: AppContext, *, action: str, cloud: str, target: str,
                     result: str, plan_id: str | None = None,
                     params: dict[str, Any] | None = None) -> int:
    """Journal an operator's decision (approve, cancel, a request through the API) as
    succeeded, naming the actor: user id and name, project, roles and request id."""
    actor = actor_of(ctx)
    return journal.record(ctx.engine(), cloud=cloud, plan_id=plan_id, action=action,
                          target=target, state=journal.SUCCEEDED, result=result,
                          params={**(params or {}), "actor": actor.to_json()},
                          by=actor.label)
