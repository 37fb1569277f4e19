"""SVG charts drawn on the server, with no library: a step line of hosts on, bars per cycle,
and the front as points to pick from. Each chart has a title and a description for screen
readers, and its numbers are also in a table beside it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from markupsafe import Markup

WIDTH, HEIGHT = 640, 240
LEFT, RIGHT, TOP, BOTTOM = 48, 16, 16, 36


@dataclass(frozen=True)
class Frame:
    """The plotting area and its scales."""

    x_max: float
    y_max: float

    def x(self, value: float) -> float:
        span = WIDTH - LEFT - RIGHT
        return LEFT + span * (value / self.x_max if self.x_max else 0)

    def y(self, value: float) -> float:
        span = HEIGHT - TOP - BOTTOM
        return HEIGHT - BOTTOM - span * (value / self.y_max if self.y_max else 0)


def _svg(title: str, desc: str, body: str, ident: str) -> Markup:
    return Markup(
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-labelledby="{ident}-t {ident}-d" xmlns="http://www.w3.org/2000/svg">'
        f'<title id="{ident}-t">{escape(title)}</title><desc id="{ident}-d">{escape(desc)}'
        f'</desc>{body}</svg>')


def _axes(frame: Frame, x_label: str, y_label: str) -> str:
    ticks = "".join(
        f'<text class="tick" x="{LEFT - 6}" y="{frame.y(v) + 4:.1f}" text-anchor="end">'
        f'{_num(v)}</text><line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" '
        f'y1="{frame.y(v):.1f}" y2="{frame.y(v):.1f}"/>'
        for v in _ticks(frame.y_max))
    return (f'{ticks}<line class="axis" x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}"'
            f' y2="{HEIGHT - BOTTOM}"/><line class="axis" x1="{LEFT}" y1="{TOP}" x2="{LEFT}" '
            f'y2="{HEIGHT - BOTTOM}"/><text class="label" x="{(LEFT + WIDTH) / 2}" '
            f'y="{HEIGHT - 6}" text-anchor="middle">{escape(x_label)}</text>'
            f'<text class="label" x="12" y="{TOP + 4}" transform="rotate(-90 12 {TOP + 4})" '
            f'text-anchor="end">{escape(y_label)}</text>')


def _ticks(top: float) -> list[float]:
    """Round steps (1, 2 or 5 times a power of ten) from 0 to the top, about four of them."""
    if top <= 0:
        return [0]
    rough = top / 4
    power = 10 ** math.floor(math.log10(rough))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= rough)
    return [round(i * step, 10) for i in range(int(top / step + 1e-9) + 1)]


def _num(value: float) -> str:
    return f"{value:.4g}" if value < 10_000 else f"{value:,.0f}"


def step_line(points: Sequence[tuple[str, float]], *, title: str, y_label: str,
              ident: str) -> Markup:
    """A step line of values over labelled moments (hosts on over time)."""
    if not points:
        return _svg(title, "no data yet", "", ident)
    frame = Frame(x_max=max(len(points) - 1, 1), y_max=max(v for _, v in points) or 1)
    d = f"M{frame.x(0):.1f} {frame.y(points[0][1]):.1f}" + "".join(
        f" H{frame.x(i):.1f} V{frame.y(value):.1f}" for i, (_, value) in enumerate(points)
        if i)
    desc = f"{len(points)} points, from {_num(points[0][1])} to {_num(points[-1][1])}"
    body = (_axes(frame, f"{points[0][0]} to {points[-1][0]}", y_label) +
            f'<path class="line" d="{d}"/>')
    return _svg(title, desc, body, ident)


def bars(values: Sequence[tuple[str, float]], *, title: str, y_label: str, ident: str,
         css: str = "bar") -> Markup:
    """A bar per labelled value (migrations per cycle, energy)."""
    if not values:
        return _svg(title, "no data yet", "", ident)
    frame = Frame(x_max=len(values), y_max=max(v for _, v in values) or 1)
    slot = (WIDTH - LEFT - RIGHT) / len(values)
    width = max(min(slot - 4, 48), 1)
    labelled = len(values) <= 6
    body = _axes(frame, "" if labelled else f"{len(values)} in all", y_label) + "".join(
        f'<rect class="{css}" x="{frame.x(i) + (slot - width) / 2:.1f}" y="{frame.y(v):.1f}" '
        f'width="{width:.1f}" height="{frame.y(0) - frame.y(v):.1f}">'
        f'<title>{escape(label)}: {_num(v)}</title></rect>' + (
            f'<text class="tick" x="{frame.x(i) + slot / 2:.1f}" y="{HEIGHT - BOTTOM + 14}" '
            f'text-anchor="middle">{escape(label)}</text>' if labelled else "")
        for i, (label, v) in enumerate(values))
    return _svg(title, f"{len(values)} bars, the largest {_num(frame.y_max)}", body, ident)


@dataclass(frozen=True)
class FrontPoint:
    """One point of the front: hosts freed for migrations, and the link that picks it."""

    label: str
    hosts_freed: int
    migrations: int
    href: str
    picked: bool


def front(points: Sequence[FrontPoint], *, ident: str = "front") -> Markup:
    """The front: hosts freed against migrations; every point a link (Tab reaches it, Enter
    picks it), the picked one marked."""
    if not points:
        return _svg("The front", "no points", "", ident)
    frame = Frame(x_max=max(p.migrations for p in points) or 1,
                  y_max=max(p.hosts_freed for p in points) or 1)
    x_ticks = "".join(
        f'<text class="tick" x="{frame.x(v):.1f}" y="{HEIGHT - BOTTOM + 14}" '
        f'text-anchor="middle">{_num(v)}</text>' for v in _ticks(frame.x_max))
    dots = x_ticks + "".join(
        f'<a href="{escape(p.href)}" class="point{" picked" if p.picked else ""}" '
        f'aria-label="{escape(p.label)}"><circle cx="{frame.x(p.migrations):.1f}" '
        f'cy="{frame.y(p.hosts_freed):.1f}" r="{8 if p.picked else 6}"/>'
        f'<title>{escape(p.label)}</title></a>' for p in points)
    desc = f"{len(points)} points: hosts freed against migrations; pick one to plan it"
    return _svg("The front: hosts freed against migrations", desc,
                _axes(frame, "migrations", "hosts freed") + dots, ident)
