"""The one line that ends an apply, a rollback or a drain (render/outcome.py final_line)."""

from __future__ import annotations

from consolidator.execution.run_terms import Outcome
from consolidator.render.outcome import final_line


def test_a_rollback_that_powers_nothing_counts_the_hosts_it_powers_on() -> None:
    """A rollback powers hosts on: when it powers none (a resume after its power-ons were
    done), its line says '0 hosts powered on', the docs' form, not '0 hosts powered off'."""
    line = final_line("rollback plan", "p1", Outcome(), 2.0)
    assert line.startswith("rollback plan p1 succeeded: 0 migrations, 0 hosts powered on in ")
    assert "powered off" not in line


def test_a_plan_names_what_it_did_and_says_powered_off_when_it_did_nothing() -> None:
    assert "0 hosts powered off" in final_line("plan", "p1", Outcome(), 1.0)
    both = final_line("plan", "p1", Outcome(powered_on=["a"], powered_off=["b", "c"]), 1.0)
    assert "1 host powered on, 2 hosts powered off" in both
    on = final_line("rollback plan", "p1", Outcome(powered_on=["a", "b"]), 1.0)
    assert "2 hosts powered on" in on and "powered off" not in on
