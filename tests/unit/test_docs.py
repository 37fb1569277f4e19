"""The docs point only at files the project has, and quote the errors the code prints.

Convention (docs/operator-guide.rst, Troubleshooting): each term of that definition list
quotes messages as ``literal`` text; inside a quote, UPPERCASE words (NAME, HOST, FILE, URL,
ID, N, HH:MM:SS), numbers, "N things" and ``...`` stand for what varies, and 'NAME' in quotes
for a quoted value.
Everything else in the quote must be text the code prints: the test finds it, placeholders
matched as wildcards, in the string constants of consolidator/ (f-string values included).
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([*ROOT.glob("docs/*.rst"), *ROOT.glob("docs/*.md"), ROOT / "README.rst"])
GUIDE = ROOT / "docs" / "operator-guide.rst"

#: A path into the project: one of its top-level directories, then more path.
PROJECT_PATH = re.compile(r"(?<![\w/.~$-])((?:etc|docs|tools|tests|consolidator|\.ci)/[\w./-]*\w)")
#: A document named on its own: NAME.rst or NAME.md.
DOCUMENT = re.compile(r"(?<![\w/.-])([\w-]+\.(?:rst|md))\b")
LITERAL = re.compile(r"``(.+?)``")
#: What varies inside a quoted message.
PLACEHOLDER = re.compile(r"'[A-Z][A-Z_ ]*'|\.\.\.|\bN [a-z]+s\b|\b\d+\b"
                         r"|\b[A-Z][A-Z_]*(?::[A-Z]+)*\b")
HOLE = "\x00"


def referenced_paths(text: str) -> set[str]:
    """Project paths and document names a doc mentions."""
    return set(PROJECT_PATH.findall(text)) | set(DOCUMENT.findall(text))


def exists(reference: str) -> bool:
    """A path from the project root, or a document in the root or in docs/."""
    if "/" in reference:
        return (ROOT / reference.rstrip(".")).exists()
    return (ROOT / reference).exists() or (ROOT / "docs" / reference).exists()


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_file_a_doc_points_to_exists(doc: Path) -> None:
    missing = sorted(r for r in referenced_paths(doc.read_text()) if not exists(r))
    assert not missing, f"{doc.name} points to files the project does not have: {missing}"


def test_the_reference_check_finds_a_missing_file() -> None:
    found = referenced_paths("see ``DESIGN.md`` and ``etc/consolidator/nothing.conf``, "
                             "not /etc/consolidator/bmc.yaml")
    assert found == {"DESIGN.md", "etc/consolidator/nothing.conf"}
    assert not any(exists(r) for r in found)


@cache
def printed_strings() -> tuple[str, ...]:
    """Every string constant of consolidator/, each f-string value replaced by a hole."""
    out = []
    for path in (ROOT / "consolidator").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.JoinedStr):
                out.append("".join(v.value if isinstance(v, ast.Constant) else HOLE
                                   for v in node.values))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                out.append(node.value)
    return tuple(out)


def quoted_errors(text: str) -> list[str]:
    """The ``quotes`` in the terms of the guide's Troubleshooting definition list."""
    section = text.split("\nTroubleshooting\n", 1)[1]
    section = section.split("\n===", 1)[0]
    terms = [line for line in section.splitlines()
             if line.startswith("``") and not line.startswith(" ")]
    return [quote for line in terms for quote in LITERAL.findall(line)]


def fragments(quote: str) -> list[str]:
    """The fixed text of a quote, cut at its placeholders and at ': ' (where messages are
    joined from parts), without the punctuation around it."""
    cut = [part.strip(" :;,.()'") for piece in PLACEHOLDER.split(quote)
           for part in piece.split(": ")]
    return [part for part in cut if part]


def is_printed(quote: str) -> bool:
    """Whether the code prints this quote: each fixed fragment is the fixed text of some
    code string (a message may be built from several, e.g. a lease's name and its error)."""
    pieces = [piece for s in printed_strings() for piece in s.split(HOLE)]
    return all(any(fragment in piece for piece in pieces) for fragment in fragments(quote))


def test_every_error_the_guide_quotes_is_one_the_code_prints() -> None:
    quotes = quoted_errors(GUIDE.read_text())
    assert len(quotes) >= 10
    wrong = [q for q in quotes if not is_printed(q)]
    assert not wrong, "quoted in the guide's Troubleshooting but printed by no code:\n" + \
        "\n".join(wrong)


def test_the_quote_check_tells_a_real_message_from_a_made_up_one() -> None:
    assert is_printed("an executor for cloud 'NAME' is already running")
    assert not is_printed("an executor for cloud 'NAME' is busy right now")
