"""Listings and shows in OpenStack's CLI conventions: -f table|json|yaml|value|csv,
-c COLUMN (repeatable), --sort-column, and tables fitted to the terminal (render/fit.py;
--long for the wide columns).

A listing is records (the JSON objects ``-f json`` prints, unchanged) and the columns that
show them. ``-c`` names a column by its heading (``-c ID``, ``-c "lower bound"``) or a record
key (``-c lower_bound``), case-insensitively. value and csv quote and separate exactly as the
``openstack`` client's (cliff's) formatters do (a test compares them), without needing cliff
in a plain install; json and yaml print the records (restricted to the chosen columns' keys),
so that ``-f json`` stays the documented contract; the table is the project's own (a header
rule, bars, no borders).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from consolidator.core.errors import UsageError
from consolidator.render.fit import fit_table

FORMATS = ("table", "json", "yaml", "value", "csv")
#: A column of full ids, cut to their first 8 characters to fit the terminal.
ID_PREFIX = 8
#: A column of times cut to the minute ('2026-11-26 13:38') to fit the terminal.
TO_THE_MINUTE = 16


@dataclass(frozen=True)
class Column:
    """One column: its heading, the record keys it shows, and how a table cell shows them."""

    header: str
    keys: tuple[str, ...]
    #: The table cell from the record (default: the first key's value).
    cell: Callable[[Mapping[str, Any]], object] | None = None
    #: Shown only with --long (or when -c names it).
    long: bool = False
    #: 'l' or 'r' (default: numbers right).
    align: str | None = None
    #: Wrapped at its words to fit the terminal, down to this width (0: never wrapped).
    wrap: int = 0
    #: Cut to this prefix to fit the terminal (an id's 8 characters, which every command
    #: takes; 0: never cut).
    short: int = 0
    #: A narrower cell that says the same, used when the table does not fit (a percentage
    #: for a bar).
    narrow: Callable[[Mapping[str, Any]], object] | None = None

    def shown(self, record: Mapping[str, Any]) -> object:
        """The table cell."""
        return self.cell(record) if self.cell else record.get(self.keys[0])

    def value(self, record: Mapping[str, Any]) -> object:
        """The machine value (value, csv): the key's own where there is one key and it is a
        scalar (a full id, not the table's short one), else the table cell."""
        if len(self.keys) == 1:
            raw = record.get(self.keys[0])
            if raw is None or isinstance(raw, (str, int, float, bool)):
                return raw
        shown = self.shown(record)
        return "" if shown is None else shown


@dataclass(frozen=True)
class Output:
    """What the command line asked of a listing."""

    fmt: str = "table"
    columns: tuple[str, ...] = ()
    sort: tuple[str, ...] = ()
    descending: bool = False
    long: bool = False
    #: The terminal's width to fit a table to (0: do not fit).
    width: int = 0


def _norm(name: str) -> str:
    return name.strip().lower().replace("_", " ").replace("-", " ")


def find(columns: Sequence[Column], name: str) -> Column:
    """The column a -c or --sort-column name means (UsageError naming the choices)."""
    wanted = _norm(name)
    for column in columns:
        if _norm(column.header) == wanted or any(_norm(k) == wanted for k in column.keys):
            return column
    choices = ", ".join(c.header for c in columns)
    raise UsageError(f"no column {name!r}: choose among {choices}")


def chosen(columns: Sequence[Column], out: Output) -> list[Column]:
    """The columns to print: -c's in its order, else every column (the long ones with
    --long only)."""
    if out.columns:
        return [find(columns, name) for name in out.columns]
    return [c for c in columns if out.long or not c.long]


def _sort_key(value: object) -> tuple[int, Any]:
    if value is None:
        return (0, "")
    if isinstance(value, (int, float)):
        return (1, value)
    return (2, str(value))


def ordered(records: Sequence[Mapping[str, Any]], columns: Sequence[Column],
            out: Output) -> list[Mapping[str, Any]]:
    """The records sorted by --sort-column (each in turn), else as given."""
    result = list(records)
    for name in reversed(out.sort):
        column = find(columns, name)

        def key(record: Mapping[str, Any], c: Column = column) -> tuple[Any, ...]:
            return _sort_key(c.value(record))

        result.sort(key=key, reverse=out.descending)
    return result


def listing(records: Sequence[Mapping[str, Any]], columns: Sequence[Column],
            out: Output) -> str:
    """A listing in the asked format (no trailing newline)."""
    shown = chosen(columns, out)
    rows = ordered(records, columns, out)
    if out.fmt in ("json", "yaml"):
        keys = [k for c in shown for k in c.keys] if out.columns else None
        docs = [{k: r.get(k) for k in keys} if keys else dict(r) for r in rows]
        return _machine(docs, out.fmt)
    if out.fmt in ("value", "csv"):
        return _delimited(out.fmt, [c.header for c in shown],
                          [[c.value(r) for c in shown] for r in rows], many=True)
    return fitted(shown, [[c.shown(r) for c in shown] for r in rows], out.width, rows)


def show(record: Mapping[str, Any], fields: Sequence[Column], out: Output,
         table_view: Callable[[], str]) -> str:
    """One record (a show command): its own table view without -c, else the fields asked."""
    if out.fmt in ("json", "yaml"):
        keys = [k for c in chosen(fields, out) for k in c.keys] if out.columns else None
        return _machine({k: record.get(k) for k in keys} if keys else dict(record), out.fmt)
    if out.fmt == "table" and not out.columns:
        return table_view()
    picked = chosen(fields, out)
    if out.fmt == "table":
        return fit_table(["FIELD", "VALUE"], [[c.header, c.shown(record)] for c in picked],
                         "ll", out.width, wraps={1: 20})
    return _delimited(out.fmt, [c.header for c in picked],
                      [c.value(record) for c in picked], many=False)


def _machine(doc: Any, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(doc, indent=2, default=str)
    import yaml

    return yaml.safe_dump(json.loads(json.dumps(doc, default=str)), sort_keys=False,
                          default_flow_style=False).rstrip("\n")


def _delimited(fmt: str, headers: list[str], data: Any, *, many: bool) -> str:
    """value and csv as the openstack client prints them (cliff's ValueFormatter and
    CSVLister with their defaults): value is the values joined by spaces, a row a line (a
    show: a value a line); csv is a heading row, then every row, non-numbers quoted."""
    rows = data if many else [data]
    if fmt == "csv":
        stream = io.StringIO()
        writer = csv.writer(stream, quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n",
                            escapechar="\\")
        writer.writerow(headers)
        writer.writerows([_plain(v) for v in row] for row in rows)
        text = stream.getvalue()
    elif many:
        text = "".join(" ".join(str(_plain(v)) for v in row) + "\n" for row in rows)
    else:
        text = "".join(f"{_plain(v)}\n" for v in data)
    return text.replace("\r\n", "\n").rstrip("\n")


def _plain(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, (list, dict)):
        return json.dumps(value)
    return value


def fitted(columns: Sequence[Column], rows: list[list[object]], width: int,
           records: Sequence[Mapping[str, Any]] = ()) -> str:
    """The table, fitted to `width` (0: as it is) by render/fit.py: ids and times cut to
    their prefix, headings and long text columns wrapped."""
    headers = [c.header for c in columns]
    align = "".join(c.align or ("r" if rows and all(
        isinstance(r[i], (int, float)) or r[i] is None for r in rows) else "l")
        for i, c in enumerate(columns))
    return fit_table(headers, rows, align, width,
                     short={i: c.short for i, c in enumerate(columns) if c.short},
                     wraps={i: c.wrap for i, c in enumerate(columns) if c.wrap},
                     narrow={i: (c.header, [c.narrow(r) for r in records])
                             for i, c in enumerate(columns) if c.narrow})
