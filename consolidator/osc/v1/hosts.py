"""openstack consolidation host list|show|drain|undrain|power on|power off"""

from __future__ import annotations

import argparse
from typing import Any

from consolidator.osc.v1.base import ListResource, PostJob, ShowResource


class ListHost(ListResource):
    """List the hosts with their recorded state"""

    path, key = "/v1/hosts", "hosts"
    columns = ("name", "recorded_state", "power", "status", "availability_zone", "instances")
    filters = (("--availability-zone", "availability_zone", "Only hosts of this zone"),
               ("--status", "status", "Only hosts whose nova-compute is enabled or disabled"))


class ShowHost(ShowResource):
    """Show one host"""

    path, key = "/v1/hosts", "host"


class _HostAction(PostJob):
    """A host action; the API records it and a daemon carries it out (202 and a job)."""

    action = ""
    power: str | None = None

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("host", metavar="<host>", help="Host name")

    def target(self, parsed_args: argparse.Namespace) -> str:
        return f"/v1/hosts/{parsed_args.host}/{self.action}"

    def body(self, parsed_args: argparse.Namespace) -> dict[str, Any]:
        return {"action": self.power} if self.power else {}


class DrainHost(_HostAction):
    """Drain a host: move its instances away and keep new work off it"""

    action, what = "drain", "host drain"


class UndrainHost(_HostAction):
    """Return a drained host to service"""

    action, what = "undrain", "host undrain"


class PowerOnHost(_HostAction):
    """Power a host on through the guarded power path"""

    action, power, what = "power", "on", "host power on"


class PowerOffHost(_HostAction):
    """Power an empty host off through the guarded power path"""

    action, power, what = "power", "off", "host power off"
