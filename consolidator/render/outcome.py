"""The end of a run: the summary table, the reasons, and one line that says how it ended."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from consolidator.core.wording import duration, plural
from consolidator.render import table


class Outcome(Protocol):
    """What the executor's Outcome offers (the render layer imports no adapter)."""

    @property
    def migrated(self) -> Sequence[object]: ...
    @property
    def failed(self) -> Mapping[str, str]: ...
    @property
    def skipped(self) -> Mapping[str, str]: ...
    @property
    def powered_off(self) -> Sequence[str]: ...
    @property
    def powered_on(self) -> Sequence[str]: ...
    @property
    def left_on(self) -> Mapping[str, str]: ...
    @property
    def not_on(self) -> Mapping[str, str]:
        """Hosts whose power-off did not end cleanly and whose BMC does not read on."""
    @property
    def interrupted(self) -> bool: ...

    @property
    def ok(self) -> bool:
        """Whether everything the plan asked for was done."""


def summary_table(outcome: Outcome) -> str:
    """What the run did, one count per row, with column headers."""
    rows: list[list[object]] = [
        ["migrated", len(outcome.migrated)], ["failed", len(outcome.failed)],
        ["skipped", len(outcome.skipped)], ["powered on", len(outcome.powered_on)],
        ["powered off", len(outcome.powered_off)], ["hosts left on", len(outcome.left_on)]]
    if outcome.not_on:
        rows.append(["hosts not on", len(outcome.not_on)])
    return table(["RESULT", "COUNT"], rows, align="lr")


def final_line(kind: str, plan_id: str, outcome: Outcome, seconds: float, *,
               dry_run: bool = False) -> str:
    """'plan 1a2b3c4d succeeded: 46 migrations, 6 hosts powered off in 3 min 12 s'."""
    done = [plural(len(outcome.migrated), "migration")]
    # A run that powers nothing says so in its own direction: a rollback powers hosts on.
    powers_on = kind.startswith("rollback")
    if outcome.powered_on or (powers_on and not outcome.powered_off):
        done.append(f"{plural(len(outcome.powered_on), 'host')} powered on")
    if outcome.powered_off or not (outcome.powered_on or powers_on):
        done.append(f"{plural(len(outcome.powered_off), 'host')} powered off")
    if dry_run:
        return (f"dry run of {kind} {plan_id} done: it would make "
                f"{', '.join(done)}; nothing was changed")
    ended = "succeeded" if outcome.ok else "was interrupted" if outcome.interrupted else "failed"
    problems = [plural(len(outcome.failed), "failed migration")] if outcome.failed else []
    if outcome.skipped:
        problems.append(f"{len(outcome.skipped)} skipped")
    if outcome.left_on:
        problems.append(f"{plural(len(outcome.left_on), 'host')} left on")
    if outcome.not_on:
        problems.append(f"{plural(len(outcome.not_on), 'host')} not on (see why)")
    tail = f" ({', '.join(problems)})" if problems else ""
    return f"{kind} {plan_id} {ended}: {', '.join(done)} in {duration(seconds)}{tail}"
