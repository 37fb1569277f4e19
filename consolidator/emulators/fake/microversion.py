"""Microversion negotiation as Nova and Placement do it (OpenStack-API-Version headers)."""

from __future__ import annotations

import re
from collections.abc import Callable

from consolidator.emulators.fake.server import HTTPError, Request, Response

Version = tuple[int, int]


def parse_version(text: str) -> Version:
    """'2.88' -> (2, 88); ValueError if malformed."""
    found = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", text)
    if not found:
        raise ValueError(text)
    return int(found.group(1)), int(found.group(2))


def format_version(version: Version) -> str:
    """(2, 88) -> '2.88'."""
    return f"{version[0]}.{version[1]}"


def requested(req: Request, service_type: str, legacy_header: str | None) -> str | None:
    """The version asked for in OpenStack-API-Version (or the legacy header), if any."""
    for value in req.headers.get_all("OpenStack-API-Version") or []:
        for part in value.split(","):
            words = part.split()
            if len(words) == 2 and words[0].lower() == service_type:
                return words[1]
    if legacy_header:
        return req.headers.get(legacy_header)
    return None


def negotiator(service_type: str, minimum: Version, maximum: Version,
               legacy_header: str | None = None) -> tuple[
                   Callable[[Request], None], Callable[[Request, Response], None]]:
    """The prepare and finish hooks that set req.microversion and echo it in headers."""

    def prepare(req: Request) -> None:
        asked = requested(req, service_type, legacy_header)
        if asked is None:
            req.microversion = minimum
            return
        if asked.strip().lower() == "latest":
            req.microversion = maximum
            return
        try:
            version = parse_version(asked)
        except ValueError:
            raise HTTPError(400, f"Invalid API version request: {asked}") from None
        if not minimum <= version <= maximum:
            raise HTTPError(406, f"Version {asked} is not supported by the API. Minimum is "
                                 f"{format_version(minimum)} and maximum is "
                                 f"{format_version(maximum)}.")
        req.microversion = version

    def finish(req: Request, resp: Response) -> None:
        text = format_version(req.microversion)
        resp.headers["OpenStack-API-Version"] = f"{service_type} {text}"
        vary = "OpenStack-API-Version"
        if legacy_header:
            resp.headers[legacy_header] = text
            vary += f", {legacy_header}"
        resp.headers["Vary"] = vary

    return prepare, finish
