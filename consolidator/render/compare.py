"""Candidate plans side by side, as a table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from consolidator.render.fit import fit_table


def render_comparison(rows: Sequence[Any], width: int = 0) -> str:
    """One line per plan: what was asked, hosts, migrations, GiB moved and watts saved;
    fitted to `width` (0: as it is) by wrapping the headings and what was asked."""
    return fit_table(["PLAN", "STATUS", "ASKED", "HOSTS BEFORE -> AFTER", "LOWER BOUND",
                  "MIGRATIONS", "GIB MOVED", "WATTS SAVED"],
                 [[r.id[:8], r.status, r.asked, f"{r.hosts_before} -> {r.hosts_after}",
                   r.lower_bound, r.migrations, f"{r.gib_moved:.1f}", f"{r.watts_saved:.0f}"]
                  for r in rows], "lllrrrrr", width, wraps={2: 12})
