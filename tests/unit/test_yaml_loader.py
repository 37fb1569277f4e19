"""The event-built YAML loader gives exactly what PyYAML's safe loader gives, or its error."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from consolidator.emulators.fake.generate import generate
from consolidator.scenario import yaml_loader

pytestmark = pytest.mark.skipif(yaml_loader.CParser is None, reason="PyYAML without libyaml")

DATA = Path(__file__).resolve().parents[2] / "consolidator" / "data"

#: Documents the builder handles itself: every implicit YAML 1.1 scalar type, quoting, styles.
HANDLED = [
    "",
    "# only a comment\n",
    "plain",
    "- 1\n- two\n- 3.5\n",
    "a: 1\nb: [1, 2, {c: d}]\nc: {}\nd: []\n",
    "bools: [yes, No, ON, off, true, False, y, n, Y, N]\n",
    "nulls: [~, null, Null, NULL, '']\nempty:\nnothing: ~\n",
    "ints: [0, -0, +12, 010, 0x1F, 0b101, 1_000, '12', 190:20:30, -7]\n",
    "floats: [1.5, -.5, 6.8523015e+5, .inf, -.Inf, 1_000.5, 190:20:30.15, 4.0, 1e3]\n",
    "dates: [2001-12-14, 2001-12-14t21:59:43.10-05:00, 2002-12-14]\n",
    "quoted: ['yes', \"no\", '1.0', \"~\", 'a: b']\n",
    "block: |\n  line one\n  line two\nfolded: >\n  folded\n  text\n",
    "yes: 1\n1: one\n1.5: x\n~: null key\n2001-01-01: date key\n",
    "dup: 1\ndup: 2\nother: 3\n",
    "names: [cmp00001, m1.tiny, vm0000001, 'on', o, t, f, 3a, 1e, .5.5]\n",
    "unicode: [héllo, \"\\u263A\", 日本]\n",
    "nested:\n  - a: 1\n    b:\n      - [x, y]\n      - {z: 2}\n",
    "--- \nexplicit: start\n...\n",
]

#: Documents handed to PyYAML: anchors, aliases, tags, merge keys.
HANDED_OVER = [
    "a: &x [1, 2]\nb: *x\n",
    "base: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\n",
    "a: !!str 5\nb: !!float 1\n",
    "&top {a: 1}",
]

#: Documents PyYAML refuses: the same error must come out.
REFUSED = [
    "a: [1, 2\n",
    "a: 1\n b: 2\n  c: 3\n",
    "- 1\n--- \n- 2\n",
    "a: =\n",
    "<<: 1\n",
    "? [1]\n: 2\n",
    "? {a: 1}\n: map\n",
    "a: !!python/object:os.system x\n",
    "key: \"unterminated\n",
    "a:\t1\n\tb: 2\n",
]


def safe(text: str) -> object:
    return yaml.load(text, Loader=yaml_loader.SAFE_LOADER)  # noqa: S506 - a safe loader


def same(a: object, b: object) -> bool:
    """Equal, with NaN equal to itself and types compared, recursively."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@pytest.mark.parametrize("text", HANDLED)
def test_built_from_events_as_the_safe_loader_builds(text: str) -> None:
    assert same(yaml_loader.build(text), safe(text))
    assert same(yaml_loader.load(text), safe(text))


def test_nan_is_resolved_as_the_safe_loader_does() -> None:
    built = yaml_loader.build("x: .NaN\n")
    assert math.isnan(built["x"])


@pytest.mark.parametrize("text", HANDED_OVER)
def test_what_the_builder_leaves_goes_to_pyyaml(text: str) -> None:
    with pytest.raises(yaml_loader._Unsupported):
        yaml_loader.build(text)
    assert same(yaml_loader.load(text), safe(text))


@pytest.mark.parametrize("text", REFUSED)
def test_errors_are_pyyaml_s_own(text: str) -> None:
    with pytest.raises(yaml.YAMLError) as expected:
        safe(text)
    with pytest.raises(yaml.YAMLError) as got:
        yaml_loader.load(text)
    assert type(got.value) is type(expected.value)
    assert str(got.value) == str(expected.value)


def test_scenarios_are_built_from_events() -> None:
    """The bundled scenario and a generated 50-host one: built here, not handed over."""
    texts = [p.read_text(encoding="utf-8") for p in sorted(DATA.glob("*.yaml"))]
    texts.append(yaml.safe_dump(generate(50, per_host=8, seed=4)))
    texts.append(yaml.safe_dump(generate(20, seed=2), default_flow_style=True))
    assert len(texts) >= 3
    for text in texts:
        assert same(yaml_loader.build(text), safe(text))


def test_a_mutated_result_does_not_leak_into_the_next_scalar() -> None:
    """Memoised scalars are immutable; collections are built afresh each time."""
    doc = yaml_loader.build("a: [1]\nb: [1]\nc: {k: v}\nd: {k: v}\n")
    doc["a"].append(2)
    doc["c"]["k"] = "changed"
    assert doc == {"a": [1, 2], "b": [1], "c": {"k": "changed"}, "d": {"k": "v"}}
