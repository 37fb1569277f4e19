"""Fitting a table to the terminal's width without losing what it says.

In turn, until the table fits: columns of ids and times are cut to a prefix that still
means the same (an id's first 8 characters, which every command takes; a time to the
minute), bars and fractions give way to percentages, headings wrap at their spaces over
the cells, and the long text columns wrap at their words (down to each one's narrowest).
A table that still does not fit is printed as it is: the width asked for is a goal, never a
reason to drop a column.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

from consolidator.render import cell, table

#: The narrowest a wrapped column gets, in characters, unless a column says otherwise.
MIN_WRAP = 10


def widest(text: str) -> int:
    """The longest line of a text."""
    return max(map(len, text.splitlines()), default=0)


def wrap(text: str, width: int) -> str:
    """A cell wrapped at its words into lines of at most `width`. A word longer than that
    (an id) starts a line of its own before it is broken, so that its prefix reads whole."""
    if not text.strip():
        return text
    lines = textwrap.wrap(text, width, break_on_hyphens=False, break_long_words=False)
    return "\n".join(line[i:i + width] for line in lines
                     for i in range(0, max(1, len(line)), max(1, width)))


def fit_table(headers: Sequence[str], rows: Sequence[Sequence[object]], align: str,
              width: int, *, short: Mapping[int, int] | None = None,
              wraps: Mapping[int, int] | None = None,
              narrow: Mapping[int, tuple[str, Sequence[object]]] | None = None) -> str:
    """The table, fitted to `width` (0: as it is). short: column -> the prefix it may be cut
    to; narrow: column -> a heading and narrower cells that say the same (a percentage for
    a bar);
    wraps: column -> the narrowest it may be wrapped to (MIN_WRAP when 0)."""
    text = table(headers, rows, align)
    if width <= 0 or widest(text) <= width:
        return text
    cells = [[cell(v) for v in row] for row in rows]
    heads = list(headers)
    for i, keep in (short or {}).items():
        for row in cells:
            row[i] = row[i][:keep]
        text = table(heads, cells, align)
        if widest(text) <= width:
            return text
    headers, aligns = list(headers), list(align)
    for i, (head, values) in (narrow or {}).items():   # percentages, right-aligned
        headers[i] = heads[i] = head
        aligns[i] = "r"
        for row, value in zip(cells, values, strict=True):
            row[i] = cell(value)
    align = "".join(aligns)
    for i, head in enumerate(heads):   # headings over narrower cells wrap at their spaces
        narrowest = max([len(w) for w in head.split()] + [_width(r[i]) for r in cells])
        heads[i] = wrap(head, narrowest) if " " in head else head
    text = table(heads, cells, align)
    original = [list(row) for row in cells]
    sizes = {i: max([_width(heads[i]), *(_width(r[i]) for r in cells)])
             for i in (wraps or {})}
    floors = {i: (wraps or {})[i] or MIN_WRAP for i in sizes}
    while widest(text) > width:
        room = {i: w for i, w in sizes.items() if w > floors[i]}
        if not room:
            break
        i = max(room, key=lambda k: room[k])
        sizes[i] = _narrower(room, i, floors[i], widest(text) - width)
        heads[i] = wrap(headers[i], sizes[i])
        for row, was in zip(cells, original, strict=True):
            row[i] = wrap(was[i], sizes[i])
        text = table(heads, cells, align)
    return text


def _narrower(room: Mapping[int, int], i: int, floor: int, over: int) -> int:
    """Column i's next width: narrowed by `over`, but not below the next widest column (so
    the wide columns narrow together) nor `floor`."""
    tied = [k for k, w in room.items() if w == room[i]]
    if len(tied) > 1:
        return max(floor, room[i] - max(1, over // len(tied)))
    below = [w for w in room.values() if w < room[i]]
    return max(floor, room[i] - over, max(below, default=floor))


def _width(text: str) -> int:
    return widest(text) if text else 0


def fit_text(text: str, width: int, indent: str = "  ") -> str:
    """Prose lines longer than `width` wrapped at their words, continuation lines indented
    like the line plus `indent` (0: as it is)."""
    if width <= 0:
        return text
    out = []
    for line in text.splitlines():
        if len(line) <= width:
            out.append(line)
            continue
        lead = line[:len(line) - len(line.lstrip())]
        out.extend(textwrap.wrap(line, width, initial_indent="", subsequent_indent=lead + indent,
                                 break_on_hyphens=False, drop_whitespace=True) or [line])
    return "\n".join(out)


def fit_kv(text: str, width: int) -> str:
    """render.kv's 'key: value' lines fitted to `width`: a long value wraps under its value
    column (0: as it is)."""
    if width <= 0:
        return text
    out = []
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        column = len(key) + len(sep) + len(rest) - len(rest.lstrip())
        if len(line) <= width or not sep or column >= width - MIN_WRAP:
            out.append(line)
            continue
        lines = textwrap.wrap(rest.strip(), width - column, break_on_hyphens=False)
        out.append(line[:column] + lines[0])
        out.extend(" " * column + more for more in lines[1:])
    return "\n".join(out)
