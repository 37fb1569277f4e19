"""Plain-text rendering for the terminal: tables, bars and charts. No colours, no I/O.

The primitives are here; ``plan``, ``hosts`` and ``report`` render those views with them.
Every command renders through this package.
"""

from __future__ import annotations

from collections.abc import Sequence


def table(headers: Sequence[str], rows: Sequence[Sequence[object]],
          align: str | None = None) -> str:
    """A table with a header rule; align holds 'l' or 'r' per column (default: numbers right).
    A heading or cell holding newlines spans as many lines (render/fit.py wraps them)."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max(map(len, h.split("\n"))) for h in headers]
    for row in cells:
        for i, value in enumerate(row):
            widths[i] = max(widths[i], *map(len, value.split("\n")))
    if align is None:   # numbers right, a '-' (None) among them too
        align = "".join(
            "r" if rows and all(isinstance(r[i], (int, float)) or r[i] is None for r in rows)
            and any(isinstance(r[i], (int, float)) for r in rows) else "l"
            for i in range(len(headers)))

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if a == "r" else v.ljust(w)
                 for v, w, a in zip(values, widths, align, strict=True)]
        return "  ".join(parts).rstrip()

    def lines(values: Sequence[str]) -> list[str]:
        split = [v.split("\n") for v in values]
        height = max((len(s) for s in split), default=1)
        return [line([s[k] if k < len(s) else "" for s in split]) for k in range(height)]

    out = [*lines(list(headers)), line(["-" * w for w in widths])]
    for row in cells:
        out.extend(lines(row))
    return "\n".join(out)


def cell(value: object) -> str:
    """A value as a table cell: '-' for None, floats without trailing zeros."""
    return _cell(value)


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.2f}".rstrip("0").rstrip(".") if value != int(value) else f"{value:.0f}"
    return str(value)


def bar(fraction: float, width: int = 20) -> str:
    """A bar of width characters filled to fraction (clipped to 0..1), e.g. [#####.....]."""
    fraction = min(max(fraction, 0.0), 1.0)
    filled = round(fraction * width)
    return "[" + "#" * filled + "." * (width - filled) + "]"


def kv(pairs: Sequence[tuple[str, object]]) -> str:
    """Aligned 'key: value' lines."""
    width = max((len(k) for k, _ in pairs), default=0)
    return "\n".join(f"{k + ':':<{width + 1}} {_cell(v)}" for k, v in pairs)


#: The widest a count bar gets, in characters.
CHART_WIDTH = 44


def count_bar(on: int, total: int, widest: int, chart: int = CHART_WIDTH) -> str:
    """'#' per host on and '.' per host off, scaled so the widest cloud fits the chart of
    `chart` characters."""
    if widest <= 0:
        return ""
    per_host = min(3.0, chart // widest) if widest <= chart else chart / widest
    return "#" * round(on * per_host) + "." * (round(total * per_host) - round(on * per_host))
