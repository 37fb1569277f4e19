"""Which hosts a plan may touch: the scope (one availability zone, one host aggregate or a
host-name glob) and the hosts kept out by config (excluded hosts and aggregates).

A host outside the scope, or kept out, is left as it is: nothing moves off it, nothing moves
onto it, and it is never powered off. Watcher's audit scopes work the same way.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass

from consolidator.core.errors import UsageError
from consolidator.core.model import Host

#: The kinds of scope, and what each names.
KINDS = {"az": "an availability zone", "aggregate": "a host aggregate",
         "host": "a host-name glob"}


@dataclass(frozen=True)
class Scope:
    """One availability zone, one host aggregate, or the hosts a name glob matches."""

    kind: str
    value: str

    def __str__(self) -> str:
        return f"{self.kind}={self.value}"

    def contains(self, host: Host) -> bool:
        """Whether the host is inside the scope."""
        if self.kind == "az":
            return host.availability_zone == self.value
        if self.kind == "aggregate":
            return self.value in host.aggregates
        return any(fnmatch.fnmatchcase(name, self.value)
                   for name in {host.name, host.compute_host})


def parse_scope(text: str | None) -> Scope | None:
    """'az=NAME', 'aggregate=NAME' or 'host=GLOB' (None or '' for no scope); UsageError
    naming the forms otherwise."""
    if text is None or not text.strip():
        return None
    kind, sep, value = text.strip().partition("=")
    kind, value = kind.strip().lower(), value.strip()
    if not sep or kind not in KINDS or not value:
        raise UsageError(f"scope {text!r}: expected az=NAME, aggregate=NAME or host=GLOB")
    return Scope(kind, value)


def check_matches(scope: Scope | None, hosts: Iterable[Host]) -> None:
    """UsageError naming a scope that no host is in (a typo would plan nothing and say
    nothing), with the zones or aggregates there are."""
    hosts = list(hosts)
    if scope is None or any(scope.contains(h) for h in hosts):
        return
    if scope.kind == "host":
        raise UsageError(f"scope {scope}: no compute host name matches {scope.value!r}")
    names = sorted({h.availability_zone for h in hosts} if scope.kind == "az" else
                   {a for h in hosts for a in h.aggregates})
    there = f"the {'zones' if scope.kind == 'az' else 'aggregates'}: {', '.join(names)}" \
        if names else "there are none"
    what = "availability zone" if scope.kind == "az" else "aggregate"
    raise UsageError(f"scope {scope}: no compute host is in the {what} {scope.value!r} "
                     f"({there})")


def host_excluded(name: str, patterns: Iterable[str]) -> bool:
    """Whether a host name matches one of the exclusion globs."""
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def left_alone(host: Host, *, scope: Scope | None, excluded_hosts: Iterable[str] = (),
               excluded_aggregates: Iterable[str] = ()) -> str | None:
    """Why a plan must leave the host as it is ('excluded by config', 'outside the scope
    az=X', 'in the excluded aggregate Y'), or None if it may touch it."""
    if host_excluded(host.name, excluded_hosts):
        return "excluded by config"
    kept = sorted(set(host.aggregates) & set(excluded_aggregates))
    if kept:
        return f"in the excluded aggregate {kept[0]}"
    if scope is not None and not scope.contains(host):
        return f"outside the scope {scope}"
    return None
