"""The front view: per algorithm, its non-dominated plans as a table and a terminal chart."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from consolidator.core.front import FrontPoint
from consolidator.render.fit import fit_table

#: Chart size in characters.
WIDTH, HEIGHT = 64, 16


def front_table(front: Mapping[str, Sequence[FrontPoint]], width: int = 0) -> str:
    """One row per point: algorithm, how, hosts on, migrations, GiB moved, bounds; fitted
    to `width` (0: as it is)."""
    rows = [[name, p.how, p.hosts_after, p.draft.lower_bound, p.migrations,
             p.draft.migrations_lower_bound, round(p.moved_gib, 1)]
            for name, points in front.items() for p in points]
    return fit_table(["ALGORITHM", "POINT", "HOSTS ON", "HOST BOUND", "MIGRATIONS",
                      "MIGRATION BOUND", "GIB MOVED"], rows, "llrrrrr", width,
                     wraps={0: 10, 1: 12})


def front_chart(front: Mapping[str, Sequence[FrontPoint]]) -> str:
    """Hosts left on (up) against migrations (right), one letter per algorithm."""
    points = [(name, p) for name, ps in front.items() for p in ps]
    if not points:
        return "(no points)"
    hosts = [p.hosts_after for _, p in points]
    moves = [p.migrations for _, p in points]
    h_lo, h_hi = min(hosts), max(hosts)
    m_hi = max(max(moves), 1)
    grid = [[" "] * WIDTH for _ in range(HEIGHT)]
    letters = {name: chr(ord("a") + n) for n, name in enumerate(front)}

    def row_of(hosts_on: int) -> int:
        """The grid row (0 at the top) where points leaving hosts_on hosts on are drawn."""
        y = 0 if h_hi == h_lo else round((hosts_on - h_lo) / (h_hi - h_lo) * (HEIGHT - 1))
        return HEIGHT - 1 - y

    for name, p in points:
        x = round(p.migrations / m_hi * (WIDTH - 1))
        cell = grid[row_of(p.hosts_after)][x]
        grid[row_of(p.hosts_after)][x] = letters[name] if cell in (" ", letters[name]) else "*"
    ticks = {row_of(v): str(v) for v in (h_lo, (h_lo + h_hi) // 2, h_hi)}
    label = len(str(h_hi))
    lines = [f"{ticks.get(row, '').rjust(label)} |{''.join(cells).rstrip()}"
             for row, cells in enumerate(grid)]
    lines.append(" " * label + " +" + "-" * WIDTH)
    axis = f"0{'migrations'.center(WIDTH - 1 - len(str(m_hi)))}{m_hi}"
    lines.append(" " * (label + 2) + axis)
    lines.append("hosts left on (up) against migrations (right); "
                 + ", ".join(f"{c} = {name}" for name, c in letters.items())
                 + "; * = several")
    return "\n".join(lines)


def front_json(front: Mapping[str, Sequence[FrontPoint]]) -> dict[str, object]:
    """The front as plain data."""
    return {"front": {name: [p.to_json() for p in points] for name, points in front.items()}}
