"""Listings in OpenStack's CLI conventions: -f, -c, --sort-column, --long, fitting the
terminal (issue 27), and the table details it found wrong."""

from __future__ import annotations

import json

import pytest
import yaml

from consolidator.core.errors import UsageError
from consolidator.render import table
from consolidator.render.asked import asked_for
from consolidator.render.fit import fit_kv, fit_table, fit_text
from consolidator.render.hosts import HOST_COLUMNS
from consolidator.render.listing import Column, Output, listing, show

COLUMNS = (Column("ID", ("id",), short=8), Column("NAME", ("name",)),
           Column("LOWER BOUND", ("lower_bound",)),
           Column("HOSTS", ("before", "after"), cell=lambda r: f"{r['before']} -> {r['after']}"),
           Column("REASON", ("reason",), wrap=12), Column("SOURCE", ("source",), long=True))
RECORDS = [
    {"id": "b2", "name": "beta", "lower_bound": 4, "before": 11, "after": 5,
     "reason": "consolidator: emptied by plan 3e45e9c7 for power-off", "source": "cloud:x"},
    {"id": "a1", "name": "alpha, the first", "lower_bound": None, "before": 5, "after": 11,
     "reason": "", "source": "cloud:y"},
]


def test_value_and_csv_print_the_chosen_columns_as_the_openstack_client_does() -> None:
    out = Output(fmt="value", columns=("id", "LOWER BOUND"))
    assert listing(RECORDS, COLUMNS, out) == "b2 4\na1 "
    csv = listing(RECORDS, COLUMNS, Output(fmt="csv", columns=("ID", "name", "hosts")))
    assert csv.splitlines() == ['"ID","NAME","HOSTS"', '"b2","beta","11 -> 5"',
                                '"a1","alpha, the first","5 -> 11"']


AWKWARD = [
    {"id": "q1", "name": 'say "hi", then \\ go', "lower_bound": 0, "before": 1.5, "after": True,
     "reason": "two\nlines", "source": None},
    {"id": "q2", "name": "", "lower_bound": -3, "before": 10**12, "after": False,
     "reason": "tab\there", "source": ["a", "b"]},
]
PLAIN = (Column("ID", ("id",)), Column("NAME", ("name",)), Column("LOWER BOUND", ("lower_bound",)),
         Column("BEFORE", ("before",)), Column("AFTER", ("after",)), Column("REASON", ("reason",)),
         Column("SOURCE", ("source",)))


def _cliff_listing(fmt: str, records: list[dict], *, many: bool = True) -> str:
    """What the openstack client's own formatters (cliff's) print for the same values."""
    import argparse
    import io

    from cliff.formatters.commaseparated import CSVLister
    from cliff.formatters.value import ValueFormatter

    def plain(value: object) -> object:
        return "" if value is None else json.dumps(value) if isinstance(value, list) else value

    headers = [c.header for c in PLAIN]
    rows = [[plain(r[c.keys[0]]) for c in PLAIN] for r in records]
    stream, args = io.StringIO(), argparse.Namespace(quote_mode="nonnumeric")
    if fmt == "csv":
        CSVLister().emit_list(headers, rows, stream, args)
    elif many:
        ValueFormatter().emit_list(headers, rows, stream, args)
    else:
        ValueFormatter().emit_one(headers, rows[0], stream, args)
    return stream.getvalue().replace("\r\n", "\n").rstrip("\n")


@pytest.mark.parametrize("fmt", ["value", "csv"])
def test_value_and_csv_are_byte_for_byte_cliffs(fmt: str) -> None:
    """render/listing.py imported cliff for these two, which a plain 'pip install .' lacks
    (issue 34): its own writer must print exactly what cliff prints, quotes, backslashes,
    newlines, numbers and booleans included."""
    assert listing(AWKWARD, PLAIN, Output(fmt=fmt)) == _cliff_listing(fmt, AWKWARD)
    assert listing([], PLAIN, Output(fmt=fmt)) == _cliff_listing(fmt, [])


def test_a_show_in_value_format_is_cliffs_one_value_a_line() -> None:
    shown = show(AWKWARD[0], PLAIN, Output(fmt="value", columns=tuple(c.header for c in PLAIN)),
                 lambda: "")
    assert shown == _cliff_listing("value", AWKWARD[:1], many=False)


def test_json_and_yaml_keep_the_records_keys_and_restrict_them_with_c() -> None:
    assert json.loads(listing(RECORDS, COLUMNS, Output(fmt="json"))) == RECORDS
    assert yaml.safe_load(listing(RECORDS, COLUMNS, Output(fmt="yaml", columns=("hosts",)))) \
        == [{"before": 11, "after": 5}, {"before": 5, "after": 11}]


def test_sort_column_and_long() -> None:
    by_id = listing(RECORDS, COLUMNS, Output(fmt="value", columns=("id",), sort=("id",)))
    assert by_id.splitlines() == ["a1", "b2"]
    down = listing(RECORDS, COLUMNS, Output(fmt="value", columns=("id",), sort=("name",),
                                            descending=True))
    assert down.splitlines() == ["b2", "a1"]
    assert "SOURCE" not in listing(RECORDS, COLUMNS, Output())
    assert "SOURCE" in listing(RECORDS, COLUMNS, Output(long=True))


def test_an_unknown_column_is_one_usage_line_naming_the_choices() -> None:
    with pytest.raises(UsageError, match=r"no column 'nope': choose among ID, NAME, "):
        listing(RECORDS, COLUMNS, Output(columns=("nope",)))


def test_a_table_fits_the_terminal_by_wrapping_its_long_columns() -> None:
    """It cut them with '...' (plans list read 'auto -> z...'): wrapping loses nothing."""
    wide = listing(RECORDS, COLUMNS, Output())
    assert max(len(line) for line in wide.splitlines()) > 60
    fitted = listing(RECORDS, COLUMNS, Output(width=60))
    assert max(len(line) for line in fitted.splitlines()) <= 60
    assert "..." not in fitted and "cloud:x" not in fitted
    words = " ".join(fitted.split())
    assert "consolidator: emptied by plan 3e45e9c7 for power-off" in words.replace(
        " for\n", " for ")


def test_ids_and_times_are_cut_to_their_prefix_only_when_the_table_does_not_fit() -> None:
    long_id = "0b86bd4c-5cb3-4a0e-9c8e-4f1c9d1d2a77"
    records = [{**RECORDS[0], "id": long_id}]
    assert long_id in listing(records, COLUMNS, Output(width=200))
    narrow = listing(records, COLUMNS, Output(width=60))
    assert long_id[:8] in narrow and long_id not in narrow


def test_fitting_keeps_alignment_of_multi_line_rows() -> None:
    text = fit_table(["NAME", "TEXT", "N"], [["a", "one two three four five six", 5],
                                            ["b", "x", None]], "llr", 24, wraps={1: 8})
    lines = text.splitlines()
    assert max(map(len, lines)) <= 24
    assert lines[2].startswith("a  ") and lines[2].endswith("5")
    assert lines[3].startswith("   ") and lines[-1].startswith("b  ") and lines[-1].endswith("-")
    assert {line.index("-") for line in lines[1:2]} == {0}


def test_hosts_list_fits_80_columns_with_percentages_for_its_bars() -> None:
    reason = "consolidator: emptied by plan 3e45e9c7-1111-2222-3333-444455556666 for power-off"
    rows = [{"host": f"compute-{n:02d}", "service": "disabled/down", "power": "off",
             "instances": 0, "vcpu": [0, 256], "memory_mb": [0, 262144],
             "disabled_reason": reason, "power_error": None} for n in range(3)]
    text = listing(rows, HOST_COLUMNS, Output(width=80))
    assert max(map(len, text.splitlines())) <= 80
    assert "0%" in text and "[" not in text and "3e45e9c7" in text
    header, first = text.splitlines()[0], text.splitlines()[2]
    assert first[header.index("VCPU") + 3] == "%"   # percentages right-aligned
    assert "[..........]" in listing(rows, HOST_COLUMNS, Output())


def test_kv_and_prose_wrap_under_their_value() -> None:
    text = fit_kv("source: " + "x" * 30 + "\nhosts:  11", 20)
    assert text.splitlines() == ["source: " + "x" * 12, "        " + "x" * 12,
                                 "        " + "x" * 6, "hosts:  11"]
    assert fit_text("  - " + "word " * 10, 20).splitlines()[1].startswith("    word")


def test_a_number_column_stays_right_aligned_when_a_row_shows_a_dash() -> None:
    """LOWER BOUND lost its alignment when a (rollback) row showed '-'."""
    text = table(["ID", "LOWER BOUND"], [["a", 4], ["b", None]])
    assert text.splitlines()[2:] == ["a   " + " " * 10 + "4", "b   " + " " * 10 + "-"]


def test_a_rollback_reads_as_one_not_as_an_internal_option() -> None:
    """plans list showed 'rollback -o target_snapshot=<uuid>'."""
    assert asked_for("rollback", None, {"target_snapshot": "6d000c1c-08e8-4c27"}) == \
        "rollback to 6d000c1c"


def test_show_prints_the_asked_fields_or_its_own_view() -> None:
    record = RECORDS[0]
    assert show(record, COLUMNS, Output(fmt="value", columns=("name", "id")),
                lambda: "VIEW") == "beta\nb2"
    assert show(record, COLUMNS, Output(), lambda: "VIEW") == "VIEW"
    assert json.loads(show(record, COLUMNS, Output(fmt="json", columns=("id",)),
                           lambda: "VIEW")) == {"id": "b2"}


def test_a_long_word_starts_its_own_line_so_its_prefix_reads_whole() -> None:
    """An id in a wrapped reason was broken after its first character ('plan 3' then
    'e45e9c7-...'), so its 8-character prefix, which every command takes, could not be read."""
    from consolidator.render.fit import wrap
    text = wrap("emptied by plan 3e45e9c7-1111-2222-3333-444455556666 for power-off", 17)
    assert text.splitlines() == ["emptied by plan", "3e45e9c7-1111-222", "2-3333-4444555566",
                                 "66", "for power-off"]
