"""openstack consolidation plan create|list|show|approve|cancel|apply"""

from __future__ import annotations

import argparse
from typing import Any

from consolidator.osc.http import unwrap
from consolidator.osc.v1.base import JobCommand, ListResource, PostJob, ShowResource, add_wait, show

#: The plan create options that go into the request as they are.
CHOICES = ("algorithm", "ranking", "max_migrations", "max_moved_gib", "target_hosts", "scope")


class CreatePlan(PostJob):
    """Plan a consolidation (a job the daemon runs), with the CLI's choices"""

    what = "plan create"

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--snapshot", metavar="<snapshot>",
                            help="Plan from this stored snapshot (default: read the cloud)")
        parser.add_argument("--algorithm", metavar="<name>", help="The packing algorithm")
        parser.add_argument("--ranking", metavar="<name>", help="The target ranking")
        parser.add_argument("--max-migrations", type=int, metavar="<n>",
                            help="Budget: at most this many migrations")
        parser.add_argument("--max-moved-gib", type=float, metavar="<gib>",
                            help="Budget: at most this much memory moved")
        parser.add_argument("--target-hosts", type=int, metavar="<k>",
                            help="Budget: stop once this many hosts stay on")
        parser.add_argument("--front", action="store_true",
                            help="Compute the front of hosts freed against migrations")
        parser.add_argument("--scope", metavar="<az=NAME|aggregate=NAME|host=GLOB>",
                            help="Plan only within this scope")

    def target(self, parsed_args: argparse.Namespace) -> str:
        return "/v1/plans"

    def body(self, parsed_args: argparse.Namespace) -> dict[str, Any]:
        body = {key: getattr(parsed_args, key) for key in CHOICES
                if getattr(parsed_args, key) is not None}
        if parsed_args.snapshot:
            body["snapshot_id"] = parsed_args.snapshot
        if parsed_args.front:
            body["front"] = True
        return body


class ListPlan(ListResource):
    """List the plans, newest first"""

    path, key = "/v1/plans", "plans"
    columns = ("id", "status", "algorithm", "migrations", "hosts_before", "hosts_after",
               "created_at")
    filters = (("--status", "status", "Only plans in this state"),)


class ShowPlan(ShowResource):
    """Show one plan: its figures, migrations and hosts to power off"""

    path, key = "/v1/plans", "plan"


class _PlanAction(JobCommand):
    """A state change of a plan, sent with the plan's ETag (If-Match)."""

    action = ""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("plan", metavar="<plan>", help="Plan id")
        parser.add_argument("--etag", metavar="<etag>",
                            help="The plan's ETag you reviewed (default: its current one)")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Any:
        what = f"plan {self.action}"
        path = f"/v1/plans/{parsed_args.plan}"
        tag = parsed_args.etag or self.client.etag(path, what=what)
        doc = self.client.post(f"{path}/{self.action}", what=what, headers={"If-Match": tag})
        if self.action == "apply":
            return self.job_result(doc, parsed_args, what)
        return show(unwrap(doc, "plan"))


class ApprovePlan(_PlanAction):
    """Approve a proposed plan"""

    action = "approve"


class CancelPlan(_PlanAction):
    """Cancel a plan"""

    action = "cancel"


class ApplyPlan(_PlanAction):
    """Apply an approved plan (a job the daemon runs)"""

    action = "apply"

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        add_wait(parser)
        return parser
