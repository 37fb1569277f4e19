"""Shutdowns recorded pending whose BMC reads off by now: confirmed at each daemon cycle.

A shutdown stays pending ('powering off') until its BMC reads off (issue 45). The actor that
asked for it confirms it while it waits; when it could not (its BMC stopped answering after
accepting the power-off, or the actor was killed), nothing else asked the BMC again, and the
host stayed 'powering off' for ever. The daemon's cycle asks it.
"""

from __future__ import annotations

import logging

from consolidator.app.context import AppContext
from consolidator.core import host_gate as hg
from consolidator.power.driver import read_power
from consolidator.store import host_states

LOG = logging.getLogger(__name__)


def confirm_shutdowns(ctx: AppContext, key: str, *, legacy: str | None = None) -> list[str]:
    """Record 'off' each host of the cloud (`key`: its identity; legacy: its clouds.yaml
    name, for rows an older release wrote) recorded 'powering off' whose BMC now reads off;
    the hosts confirmed. Only a host still recorded 'powering off' when the record is
    written changes (another actor's newer record wins)."""
    engine = ctx.engine()
    pending = [name for name, state in host_states.all_recorded(engine, key,
                                                                legacy=legacy).items()
               if state.state == hg.POWERING_OFF]
    if not pending:
        return []
    lookup = ctx.power_lookup()
    confirmed = []
    for name in pending:
        driver = lookup(name)
        if driver is None or read_power(driver) != "off":
            continue
        if host_states.change(engine, key, name, hg.OFF, actor=hg.CYCLE, legacy=legacy,
                              only_from=hg.POWERING_OFF,
                              why="its BMC reads off: the shutdown requested is done"):
            LOG.info("%s: its BMC reads off: its pending shutdown is recorded done", name)
            confirmed.append(name)
    return confirmed
