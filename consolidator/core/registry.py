"""Registries of named plug-ins: algorithms, rankings and power drivers are each found here.

A registry maps a name (the one the CLI and the config use) to an entry with a one-line
summary and where it comes from. Each kind's catalog module imports its plug-ins and adds
every one of them once, so no plug-in imports the registry that lists it. The CLI's listings
and the config validation read the same registries.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from consolidator.core.errors import UsageError

T = TypeVar("T")


@dataclass(frozen=True)
class Entry(Generic[T]):
    """One registered plug-in: its name, a one-line summary, its source and the object."""

    name: str
    summary: str
    source: str
    obj: T
    #: Its -o KEY=VALUE options: key -> the form of its value.
    options: Mapping[str, str] = field(default_factory=dict)


class Registry(Generic[T]):
    """Named plug-ins of one kind ("algorithm", "ranking", "power driver")."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._entries: dict[str, Entry[T]] = {}

    def add(self, name: str, summary: str, source: str, obj: T,
            options: Mapping[str, str] | None = None) -> T:
        """List obj under name, with its typed options; a name listed twice is a bug."""
        if name in self._entries:
            raise ValueError(f"{self.kind} {name!r} is registered twice")
        self._entries[name] = Entry(name, summary, source, obj, dict(options or {}))
        return obj

    def entry(self, name: str) -> Entry[T]:
        """The entry of that name, or a UsageError that lists the valid names."""
        try:
            return self._entries[name]
        except KeyError:
            raise UsageError(f"unknown {self.kind} {name!r}: choose one of "
                             f"{', '.join(self.names())}") from None

    def get(self, name: str) -> T:
        """The registered object of that name (UsageError naming the valid ones)."""
        return self.entry(name).obj

    def names(self) -> list[str]:
        """Every registered name, sorted."""
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[Entry[T]]:
        return iter(sorted(self._entries.values(), key=lambda e: e.name))
