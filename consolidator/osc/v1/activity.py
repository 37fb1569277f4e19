"""openstack consolidation rollback create, journal list, job show"""

from __future__ import annotations

import argparse
from typing import Any

from consolidator.osc.v1.base import ListResource, PostJob, ShowResource


class CreateRollback(PostJob):
    """Roll the cloud back to a snapshot's placement (a job the daemon runs)"""

    what = "rollback create"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("snapshot", metavar="<snapshot>", help="The snapshot to return to")
        parser.add_argument("--partial", action="store_true",
                            help="Keep what can be kept when a host is missing")

    def target(self, parsed_args: argparse.Namespace) -> str:
        return "/v1/rollbacks"

    def body(self, parsed_args: argparse.Namespace) -> dict[str, Any]:
        body: dict[str, Any] = {"snapshot_id": parsed_args.snapshot}
        if parsed_args.partial:
            body["partial"] = True
        return body


class ListJournal(ListResource):
    """List the journal: every action, who did it and how it ended"""

    path, key = "/v1/journal", "journal"
    columns = ("id", "created_at", "action", "target", "plan_id", "state", "operator")
    filters = (("--plan", "plan_id", "Only this plan's actions"),
               ("--host", "host", "Only actions on this host"),
               ("--action", "action", "Only this kind of action"),
               ("--since", "since", "Only since this ISO 8601 time"))


class ShowJob(ShowResource):
    """Show a job: what it does, its state, and what it came to"""

    path, key = "/v1/jobs", "job"
