"""Jobs in the database: work the API recorded, claimed and carried out by the daemon."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from sqlalchemy import Engine, func, select, update

from consolidator.core.errors import NotFoundError
from consolidator.store.db import translate_errors
from consolidator.store.tables import jobs

QUEUED, RUNNING, SUCCEEDED, FAILED, EXPIRED = "queued", "running", "succeeded", "failed", \
    "expired"
STATES = (QUEUED, RUNNING, SUCCEEDED, FAILED, EXPIRED)


@dataclass(frozen=True)
class Job:
    """One job row."""

    id: str
    cloud: str
    kind: str
    target: str
    params: dict[str, Any]
    state: str
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    requester: dict[str, Any]
    claimed_by: str | None
    progress: str | None
    result: Any
    error: str | None


def _now() -> datetime:
    return datetime.now(timezone.utc)


def add(engine: Engine, *, cloud: str, kind: str, target: str, params: dict[str, Any],
        requester: dict[str, Any]) -> Job:
    """Record a queued job; return it."""
    now = _now()
    row: dict[str, Any] = {"id": str(uuid.uuid4()), "cloud": cloud, "kind": kind, "target": target,
           "params": params, "state": QUEUED, "created_at": now, "updated_at": now,
           "started_at": None, "finished_at": None, "requester": requester,
           "claimed_by": None, "progress": None, "result": None, "error": None}
    with translate_errors(engine), engine.begin() as conn:
        conn.execute(jobs.insert().values(**row))
    return Job(**row)


def get(engine: Engine, job_id: str) -> Job:
    """One job; NotFoundError when there is none of that id."""
    with translate_errors(engine), engine.connect() as conn:
        row = conn.execute(select(jobs).where(jobs.c.id == job_id)).first()
    if row is None:
        raise NotFoundError(f"no job {job_id}")
    return Job(**row._mapping)


def listing(engine: Engine, *, limit: int, marker: str | None = None,
            state: str | None = None) -> list[Job]:
    """Jobs, newest first, after the marker job."""
    query = select(jobs).order_by(jobs.c.created_at.desc(), jobs.c.id.desc()).limit(limit)
    if state:
        query = query.where(jobs.c.state == state)
    if marker:
        after = get(engine, marker)
        query = query.where((jobs.c.created_at < after.created_at) | (
            (jobs.c.created_at == after.created_at) & (jobs.c.id < after.id)))
    with translate_errors(engine), engine.connect() as conn:
        return [Job(**row._mapping) for row in conn.execute(query)]


def expire_unclaimed(engine: Engine, *, older_than: float) -> int:
    """Mark queued jobs no daemon claimed within older_than seconds as expired (so none runs
    them late); how many."""
    now = _now()
    limit = now - timedelta(seconds=older_than)
    with translate_errors(engine), engine.begin() as conn:
        result = conn.execute(update(jobs).where(
            jobs.c.state == QUEUED, jobs.c.created_at < limit).values(
            state=EXPIRED, updated_at=now, finished_at=now,
            error=f"no daemon picked it up within {older_than:g} s: is 'consolidator daemon' "
                  f"running for this cloud and holding its lease? Ask again once it is"))
    return int(result.rowcount or 0)


def claim_next(engine: Engine, *, cloud: str, holder: str) -> Job | None:
    """Claim the oldest queued job of a cloud for holder (queued -> running, only if still
    queued, so that two daemons never both run it); None when there is none."""
    with translate_errors(engine), engine.begin() as conn:
        row = conn.execute(select(jobs.c.id).where(
            jobs.c.cloud == cloud, jobs.c.state == QUEUED).order_by(
            jobs.c.created_at, jobs.c.id).limit(1)).first()
        if row is None:
            return None
        now = _now()
        done = conn.execute(update(jobs).where(jobs.c.id == row.id, jobs.c.state == QUEUED)
                            .values(state=RUNNING, claimed_by=holder, started_at=now,
                                    updated_at=now))
        if not done.rowcount:
            return None
    return get(engine, row.id)


def set_progress(engine: Engine, job_id: str, progress: str) -> None:
    """Record how far a running job got."""
    with translate_errors(engine), engine.begin() as conn:
        conn.execute(update(jobs).where(jobs.c.id == job_id).values(
            progress=progress[:4000], updated_at=_now()))


def finish(engine: Engine, job_id: str, *, state: str, result: Any = None,
           error: str | None = None) -> None:
    """Record how a job ended: succeeded with its result, or failed with why."""
    now = _now()
    with translate_errors(engine), engine.begin() as conn:
        conn.execute(update(jobs).where(jobs.c.id == job_id).values(
            state=state, result=result, error=None if error is None else error[:4000],
            updated_at=now, finished_at=now))


def count_by_state(engine: Engine) -> dict[str, int]:
    """How many jobs are in each state."""
    with translate_errors(engine), engine.connect() as conn:
        rows = conn.execute(select(jobs.c.state, func.count()).group_by(jobs.c.state))
        return {state: int(count) for state, count in rows}
