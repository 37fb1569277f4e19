"""What every consolidation command shares: the client, a document as ShowOne's columns and
values, a list as Lister's, and the job a state change starts."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterable, Sequence
from typing import Any

from cliff import columns as cliff_columns
from osc_lib.command import command

from consolidator.osc.http import ConsolidationClient, unwrap


class NestedColumn(cliff_columns.FormattableColumn):
    """A list or mapping: compact JSON in a table, the value itself for json and yaml."""

    def human_readable(self) -> str:
        return json.dumps(self._value, sort_keys=True, separators=(", ", ": "))

    def machine_readable(self) -> Any:
        return self._value


def cell(value: Any) -> Any:
    return NestedColumn(value) if isinstance(value, dict | list) else value


def show(doc: dict[str, Any]) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    """A document as ShowOne's (columns, values), keys sorted, links left out."""
    keys = tuple(sorted(k for k in doc if k != "links"))
    return keys, tuple(cell(doc[k]) for k in keys)


def rows(items: Iterable[dict[str, Any]], columns: Sequence[str]
         ) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
    """A list as Lister's (columns, rows); a missing field is empty."""
    return tuple(columns), [tuple(cell(item.get(c)) for c in columns) for item in items]


def add_paging(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--limit", type=int, metavar="<n>",
                        help="At most this many (default: every page, following next links)")
    parser.add_argument("--marker", metavar="<id>", help="Start after this item")


def add_wait(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wait", action="store_true",
                        help="Wait for the job to finish and show it")
    parser.add_argument("--timeout", type=float, default=3600.0, metavar="<seconds>",
                        help="With --wait: give up after this long (default 3600)")


class ClientMixin:
    """The consolidation client of OSC's client manager."""

    app: Any

    @property
    def client(self) -> ConsolidationClient:
        return self.app.client_manager.consolidation


class JobCommand(ClientMixin, command.ShowOne):
    """A command whose answer is a job (202): shows the job, or waits for it with --wait."""

    def job_result(self, resp_doc: Any, parsed_args: argparse.Namespace,
                   what: str) -> tuple[tuple[str, ...], tuple[Any, ...]]:
        job = unwrap(resp_doc, "job")
        if getattr(parsed_args, "wait", False) and isinstance(job, dict) and job.get("id"):
            job = self.client.wait_job(f"/v1/jobs/{job['id']}", what=what,
                                       timeout_s=parsed_args.timeout)
        return show(job if isinstance(job, dict) else {"result": job})


class ShowResource(ClientMixin, command.ShowOne):
    """`... show <id>`: GET {path}/{id}, shown field by field."""

    path = ""
    key = ""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        parser.add_argument("ident", metavar=f"<{self.key}>", help=f"The {self.key}'s id")
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Any:
        doc = self.client.get(f"{self.path}/{parsed_args.ident}", what=f"{self.key} show")
        return show(unwrap(doc, self.key))


class ListResource(ClientMixin, command.Lister):
    """`... list`: GET {path}, every page, with the filters as query parameters."""

    path = ""
    key = ""
    columns: tuple[str, ...] = ()
    #: (option, query parameter, help) of each filter.
    filters: tuple[tuple[str, str, str], ...] = ()

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        for option, param, text in self.filters:
            parser.add_argument(option, dest=param, metavar=f"<{param}>", help=text)
        add_paging(parser)
        return parser

    def take_action(self, parsed_args: argparse.Namespace) -> Any:
        params = {param: getattr(parsed_args, param) for _, param, _ in self.filters}
        params.update(limit=parsed_args.limit, marker=parsed_args.marker)
        what = f"{self.key.rstrip('s')} list"
        return rows(self.client.listing(self.path, self.key, what=what, params=params),
                    self.columns)


class PostJob(JobCommand):
    """A POST whose answer is a job; `body()` makes the request from the arguments."""

    what = ""

    def get_parser(self, prog_name: str) -> argparse.ArgumentParser:
        parser = super().get_parser(prog_name)
        self.add_arguments(parser)
        add_wait(parser)
        return parser

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """The command's own arguments."""

    def target(self, parsed_args: argparse.Namespace) -> str:
        raise NotImplementedError

    def body(self, parsed_args: argparse.Namespace) -> dict[str, Any]:
        return {}

    def take_action(self, parsed_args: argparse.Namespace) -> Any:
        doc = self.client.post(self.target(parsed_args), what=self.what,
                               body=self.body(parsed_args))
        return self.job_result(doc, parsed_args, self.what)
