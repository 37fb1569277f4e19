"""The replay table's notes: a note several rows share is printed once, naming them."""

from __future__ import annotations

from consolidator.core.replay.metrics import ReplayResult
from consolidator.render.replay import shared_notes


def _row(policy: str, *notes: str) -> ReplayResult:
    return ReplayResult(policy, 1.0, 0.0, 0.0, 0.0, 0, (1,), notes)


def test_a_note_the_rows_share_is_printed_once_with_every_row_named() -> None:
    ended = "as in CloudSim 3.0.3, a VM that asks for no CPU ends: 4 of 12 VMs ended"
    rows = [_row("npa"), _row("lr-mmt-1.2", f"lr-mmt-1.2: {ended}"),
            _row("consolidator", f"consolidator: {ended}", "consolidator: 3 daemon cycles")]
    assert shared_notes(rows) == [f"lr-mmt-1.2, consolidator: {ended}",
                                  "consolidator: 3 daemon cycles"]


def test_a_note_not_of_the_row_is_kept_as_it_is() -> None:
    rows = [_row("a", "plan x: did not finish"), _row("b", "plan x: did not finish")]
    assert shared_notes(rows) == ["plan x: did not finish"]
