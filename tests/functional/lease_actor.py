"""A second process for the lease tests, with its own clock (time-machine) and its own engine.

    python -m tests.functional.lease_actor acquire URL NAME HOLDER [--skew S] [--ttl T]
        take or renew a lease; prints "held" or "refused"
    python -m tests.functional.lease_actor execute URL PLAN_ID CLOUDS_YAML BMC_YAML
        [--skew S] [--ttl T] [--resume] [--wait W]
        run a stored plan with an executor (waiting up to W s for its lease); prints the
        outcome as JSON
    python -m tests.functional.lease_actor power-on URL HOST CLOUDS_YAML BMC_YAML
        [--skew S] [--power-timeout T] [--force] [--cloud NAME]
        what 'consolidator hosts power on HOST' does; prints the BMC's state, or the error
        on stderr (exit 1)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from contextlib import ExitStack
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any


def expire_lease(engine: Any, name: str) -> None:
    """Expire a lease now by the database's clock, as its TTL passing would: a test ends the
    lease of a holder it killed (or froze) explicitly before the next actor starts, rather
    than sleeping through the TTL and hoping a loaded machine kept up. Every lease its holder
    took with it (an executor's lease under the cloud's identity and its name) expires too."""
    from sqlalchemy import or_, select, update

    from consolidator.store.leases import db_now
    from consolidator.store.tables import leases

    with engine.begin() as conn:
        holder = select(leases.c.holder).where(leases.c.name == name).scalar_subquery()
        conn.execute(update(leases).where(or_(leases.c.name == name,
                                              leases.c.holder == holder)).values(
            expires_at=db_now(engine.dialect.name, -1.0)))


def wait_for_renewal(engine: Any, name: str, ttl: float) -> Any:
    """Wait until the lease, still with its first holder, has been renewed to an expiry a
    whole TTL (seconds) beyond the one it had when first read: it would have lapsed by now had
    nothing renewed it. Returns the lease as first read."""
    from consolidator.store.leases import current
    from tests.functional.waits import wait_until

    first = wait_until(lambda: current(engine, name), f"someone to hold the lease {name!r}")

    def renewed() -> bool:
        now = current(engine, name)
        assert now is not None and now.holder == first.holder, f"{name!r} changed hands: {now}"
        return bool(now.expires_at >= first.expires_at + timedelta(seconds=ttl))

    wait_until(renewed, f"the lease {name!r} to be renewed past its first expiry")
    return first


def _acquire(args: argparse.Namespace) -> int:
    from consolidator.store.db import make_engine
    from consolidator.store.leases import acquire

    engine = make_engine(args.url)
    print("held" if acquire(engine, args.name, args.holder, args.ttl) else "refused")
    engine.dispose()
    return 0


def _execute(args: argparse.Namespace) -> int:
    import openstack
    import yaml

    from consolidator.execution.executor import Executor, ExecutorSettings
    from consolidator.openstack.nova import Nova
    from consolidator.power.bmc_file import load_bmc_file
    from consolidator.power.catalog import driver_for
    from consolidator.store.db import make_engine
    from consolidator.store.leases import LeaseHeldError
    from consolidator.store.plans import load_plan
    from consolidator.store.snapshots import load_snapshot

    engine = make_engine(args.url)
    plan = load_plan(engine, args.plan)
    snap = load_snapshot(engine, plan.snapshot_id)
    entry = yaml.safe_load(Path(args.clouds_yaml).read_text())["clouds"]["fake"]
    conn = openstack.connect(load_yaml_config=False, load_envvars=False, **entry)
    configs = load_bmc_file(args.bmc_yaml)
    executor = Executor(engine, Nova(conn), snap.info.cloud, snap.cluster,
                        ExecutorSettings(poll_interval=0.05, max_parallel=args.max_parallel,
                                         power_timeout=300, lease_ttl=args.ttl),
                        lambda h: driver_for(configs[h]) if h in configs else None,
                        report=lambda line: print(line, file=sys.stderr, flush=True))
    deadline = time.monotonic() + args.wait
    while True:
        try:
            outcome = executor.run(plan, resume=args.resume)
            break
        except LeaseHeldError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    print(json.dumps({"holder": executor.holder,
                      "migrated": [m.instance_name for m in outcome.migrated],
                      "skipped": outcome.skipped, "failed": outcome.failed,
                      "powered_off": outcome.powered_off, "left_on": outcome.left_on,
                      "interrupted": outcome.interrupted}))
    return 0


def _power_on(args: argparse.Namespace) -> int:
    import openstack
    import yaml

    from consolidator.app.config import config_from_sections
    from consolidator.app.context import AppContext
    from consolidator.app.power import power_on
    from consolidator.core.errors import ConsolidatorError
    from consolidator.power.bmc_file import load_bmc_file
    from consolidator.power.catalog import driver_for
    from consolidator.store.db import make_engine

    entry = yaml.safe_load(Path(args.clouds_yaml).read_text())["clouds"][args.cloud]
    configs = load_bmc_file(args.bmc_yaml)
    config = config_from_sections({"executor": {
        "power_timeout": str(args.power_timeout), "poll_interval": "0.05",
        "lease_ttl": str(args.ttl)}})
    ctx = AppContext.of(
        config=config, engine=make_engine(args.url), cloud=args.cloud,
        connect=lambda: openstack.connect(load_yaml_config=False, load_envvars=False,
                                          **entry),
        power=lambda h: driver_for(configs[h]) if h in configs else None,
        report=lambda line: print(line, file=sys.stderr, flush=True))
    try:
        print(power_on(ctx, args.host, **({"force": True} if args.force else {})))
    except ConsolidatorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments and act under a clock set --skew seconds away."""
    parser = argparse.ArgumentParser(prog="lease_actor")
    parser.add_argument("--skew", type=float, default=0.0)
    parser.add_argument("--ttl", type=float, default=60.0)
    sub = parser.add_subparsers(dest="command", required=True)
    acq = sub.add_parser("acquire")
    acq.add_argument("url")
    acq.add_argument("name")
    acq.add_argument("holder")
    ex = sub.add_parser("execute")
    ex.add_argument("url")
    ex.add_argument("plan")
    ex.add_argument("clouds_yaml")
    ex.add_argument("bmc_yaml")
    ex.add_argument("--resume", action="store_true")
    ex.add_argument("--wait", type=float, default=0.0)
    ex.add_argument("--max-parallel", type=int, default=1)
    on = sub.add_parser("power-on")
    on.add_argument("url")
    on.add_argument("host")
    on.add_argument("clouds_yaml")
    on.add_argument("bmc_yaml")
    on.add_argument("--power-timeout", type=float, default=30.0)
    on.add_argument("--force", action="store_true")
    on.add_argument("--cloud", default="fake")
    args = parser.parse_args(argv)
    with ExitStack() as stack:
        if args.skew:
            import time_machine

            stack.enter_context(time_machine.travel(
                datetime.now(timezone.utc) + timedelta(seconds=args.skew), tick=True))
        return {"acquire": _acquire, "execute": _execute, "power-on": _power_on}[
            args.command](args)


if __name__ == "__main__":
    sys.exit(main())
