"""openstack consolidation snapshot create|list|show"""

from __future__ import annotations

import argparse

from consolidator.osc.v1.base import ListResource, PostJob, ShowResource


class CreateSnapshot(PostJob):
    """Read the cloud into a new snapshot (a job the daemon runs)"""

    what = "snapshot create"

    def target(self, parsed_args: argparse.Namespace) -> str:
        return "/v1/snapshots"


class ListSnapshot(ListResource):
    """List the stored snapshots, newest first"""

    path, key = "/v1/snapshots", "snapshots"
    columns = ("id", "taken_at", "cloud", "source", "host_count", "instance_count")


class ShowSnapshot(ShowResource):
    """Show one snapshot"""

    path, key = "/v1/snapshots", "snapshot"
