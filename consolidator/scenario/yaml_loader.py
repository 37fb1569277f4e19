"""A fast safe YAML loader: Python objects built straight from libyaml's parser events.

``yaml.load(text, Loader=yaml.CSafeLoader)`` parses with libyaml, but still composes a node
object per value and resolves every scalar in Python, which makes a 1 MB scenario file take
over a second. Building dicts, lists and scalars directly from the C parser's events, with
the same YAML 1.1 implicit resolution as PyYAML's safe loader (memoised per plain scalar),
takes about a quarter of that.

The result is the safe loader's result. Whatever this builder does not handle itself (anchors
and aliases, explicit tags, merge keys, complex keys, several documents, a parse error) makes it
hand the whole text to PyYAML's safe loader, so rare documents and every error message are
PyYAML's own. Without libyaml, PyYAML's pure-Python safe loader does the work.

Before that, the aliases are counted from the parser's events, with nothing expanded: a
document whose aliases would add more values than it writes itself (and more than
``ALIAS_VALUES``) is refused (``AliasExpansionError``), so a few hundred bytes of nested
aliases (a "billion laughs") cannot exhaust memory here, in the scenario cache or in the
validation that walks the document.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.events import (
    AliasEvent,
    DocumentEndEvent,
    DocumentStartEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import ScalarNode

CParser: type[Any] | None
try:
    from yaml._yaml import CParser
except ImportError:  # PyYAML built without libyaml
    CParser = None

#: PyYAML's safe loader: libyaml's where it is installed, else the pure-Python one.
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: Tags of plain scalars that only take their meaning inside a mapping (merge, value).
_MAPPING_ONLY_TAGS = frozenset({"tag:yaml.org,2002:merge", "tag:yaml.org,2002:value"})
_STR_TAG = "tag:yaml.org,2002:str"


class _Unsupported(Exception):
    """The document uses something this builder leaves to PyYAML."""


#: Values that aliases may add to a document beyond the ones it writes (or as many as it
#: writes, if that is more).
ALIAS_VALUES = 1_000_000


class AliasExpansionError(yaml.MarkedYAMLError):
    """The document's aliases would expand it beyond the bound."""


def load(text: str) -> Any:
    """Parse YAML text as ``yaml.safe_load`` does (one document; raises yaml.YAMLError, and
    AliasExpansionError for aliases that would expand it too far)."""
    if CParser is not None:
        try:
            return build(text)
        except (_Unsupported, yaml.YAMLError):
            pass  # PyYAML's loader gives the result, or its own error, below
    check_aliases(text)
    return yaml.load(text, Loader=SAFE_LOADER)  # noqa: S506 - a safe loader


def check_aliases(text: str, bound: int = ALIAS_VALUES) -> None:
    """Raise AliasExpansionError if expanding the aliases would add more than
    max(bound, values written) values; counted from parser events, nothing is built. A
    parse error is left to the loader, which reports it."""
    written = extra = 0
    sizes: dict[str, int] = {}
    stack: list[list[Any]] = []    # per open collection: [its size so far, its anchor]
    try:
        for event in _events(text):
            kind = type(event)
            if kind is AliasEvent:
                size = sizes.get(event.anchor, 1)
                extra += size - 1
                if extra > max(bound, written):
                    raise AliasExpansionError(
                        None, None, f"its aliases expand to more than {max(bound, written):,} "
                        f"values (an alias bomb?): write the values out, or use fewer "
                        f"nested aliases", event.start_mark)
            elif kind is ScalarEvent:
                written, size = written + 1, 1
                if event.anchor is not None:
                    sizes[event.anchor] = 1
            elif kind is MappingStartEvent or kind is SequenceStartEvent:
                written += 1
                stack.append([1, event.anchor])
                continue
            elif kind is MappingEndEvent or kind is SequenceEndEvent:
                size, anchor = stack.pop()
                if anchor is not None:
                    sizes[anchor] = size
            else:
                continue
            if stack:
                stack[-1][0] += size
    except AliasExpansionError:
        raise
    except yaml.YAMLError:
        return


def _events(text: str) -> Any:
    """The parser's events: libyaml's where it is installed."""
    if CParser is not None:
        parser = CParser(text)
        while (event := parser.get_event()) is not None:
            yield event
            if type(event) is StreamEndEvent:
                return
    else:
        yield from yaml.parse(text, Loader=yaml.SafeLoader)


def build(text: str) -> Any:
    """Build the document from libyaml's events; raise _Unsupported for what is not handled."""
    scalar = _ScalarResolver()
    assert CParser is not None, "build() runs only with libyaml"
    # Any: the loop compares exact event classes (faster than isinstance), which mypy does
    # not narrow on
    get_event: Callable[[], Any] = CParser(text).get_event
    get_event()  # StreamStartEvent
    event = get_event()
    if type(event) is StreamEndEvent:
        return None
    if type(event) is not DocumentStartEvent:
        raise _Unsupported
    root: list[Any] = []
    # each open collection, with its pending mapping key (_NO_KEY when none is pending)
    stack: list[list[Any]] = []
    while True:
        event = get_event()
        kind = type(event)
        if kind is ScalarEvent:
            if event.anchor is not None or event.tag is not None:
                raise _Unsupported
            value = scalar(event.value) if event.implicit[0] else event.value
        elif kind is MappingStartEvent or kind is SequenceStartEvent:
            if event.anchor is not None or event.tag is not None:
                raise _Unsupported
            stack.append([{} if kind is MappingStartEvent else [], _NO_KEY])
            continue
        elif kind is MappingEndEvent or kind is SequenceEndEvent:
            value = stack.pop()[0]
        elif kind is DocumentEndEvent:
            break
        else:  # an alias
            raise _Unsupported
        if not stack:
            root.append(value)
            continue
        top = stack[-1]
        container = top[0]
        if type(container) is list:
            container.append(value)
        elif top[1] is _NO_KEY:
            if kind is not ScalarEvent or value.__class__ in _MUTABLE:
                raise _Unsupported  # a complex key: PyYAML refuses or handles it
            top[1] = value
        else:
            container[top[1]] = value
            top[1] = _NO_KEY
    if type(get_event()) is not StreamEndEvent:
        raise _Unsupported  # a second document: PyYAML's loader raises its own error
    return root[0] if root else None


class _NoKey:
    """No mapping key is pending."""


_NO_KEY = _NoKey()
_MUTABLE = (dict, list)


class _ScalarResolver:
    """Plain scalars resolved and constructed as PyYAML's safe loader does, memoised."""

    def __init__(self) -> None:
        self.resolvers = SAFE_LOADER.yaml_implicit_resolvers
        self.wildcard = self.resolvers.get(None, [])
        self.constructor = SafeConstructor()
        self.seen: dict[str, Any] = {}

    def __call__(self, value: str) -> Any:
        try:
            return self.seen[value]
        except KeyError:
            pass
        tag = self.tag(value)
        if tag == _STR_TAG:
            result: Any = value
        elif tag in _MAPPING_ONLY_TAGS or tag not in SafeConstructor.yaml_constructors:
            raise _Unsupported
        else:
            result = SafeConstructor.yaml_constructors[tag](self.constructor,
                                                             ScalarNode(tag, value))
        self.seen[value] = result
        return result

    def tag(self, value: str) -> str:
        """The implicit tag of a plain scalar (PyYAML's Resolver.resolve for scalars)."""
        candidates = self.resolvers.get(value[0] if value else "", [])
        for tag, regexp in [*candidates, *self.wildcard]:
            if regexp.match(value):
                return tag
        return _STR_TAG
