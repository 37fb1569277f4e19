"""A long plan stays readable: every wave's count, one truncation that says how to see all."""

from __future__ import annotations

import re
from datetime import datetime, timezone

from consolidator.core.plan import Move, PlanDraft, StoredPlan
from consolidator.render.plan import MAX_LISTED, render_plan, saving_summary
from tests.unit.builders import cluster, hosts, vm

NOW = datetime(2024, 5, 1, tzinfo=timezone.utc)
WAVES = (40, 50, 30)    # 120 migrations, more than MAX_LISTED


def long_plan(status: str = "proposed", algorithm: str = "firstfit",
              power_on: tuple[str, ...] = ()) -> tuple[StoredPlan, object]:
    """40 sources of 3 instances each; their moves go in three waves to four targets."""
    names = [f"s{n:02d}" for n in range(40)] + ["t0", "t1", "t2", "t3"]
    vms = [vm(f"vm-{n:03d}", f"s{n // 3:02d}") for n in range(sum(WAVES))]
    c = cluster(hosts(*[(name, 64, 262144) for name in names]), vms)
    moves, n = [], 0
    for wave, count in enumerate(WAVES, start=1):
        for _ in range(count):
            moves.append(Move(vms[n].id, vms[n].name, vms[n].host, f"t{n % 4}", wave))
            n += 1
    draft = PlanDraft(algorithm=algorithm, ranking=None, migrations=tuple(moves),
                      power_off=() if power_on else tuple(names[:40]), power_on=power_on,
                      hosts_before=44, hosts_after=4 if not power_on else 44,
                      lower_bound=0 if power_on else 2, migrations_lower_bound=len(moves),
                      spare=0)
    return StoredPlan(id="1a2b3c4d-0000", cloud="lab", snapshot_id="snap", status=status,
                      created_at=NOW, updated_at=NOW, reason=None, draft=draft), c


def listed_moves(text: str) -> int:
    return len(re.findall(r"^    vm-\d+ ", text, flags=re.M))


def test_a_long_plan_gives_every_waves_count_and_says_how_to_see_all() -> None:
    plan, c = long_plan()
    text = render_plan(plan, c)
    for wave, count in enumerate(WAVES, start=1):
        assert re.search(rf"^  wave {wave}: {count} migrations from \d+ hosts", text, re.M), wave
    assert listed_moves(text) == MAX_LISTED
    hints = [line for line in text.splitlines() if "--all" in line]
    assert hints == [f"  ({MAX_LISTED} of {sum(WAVES)} migrations listed: "
                     f"'consolidator plan show {plan.id} --all' lists them all)"]
    cut = [line for line in text.splitlines() if re.match(r"^    \.\.\. \d+ more", line)]
    assert sum(int(line.split()[1]) for line in cut) == sum(WAVES) - MAX_LISTED


def test_all_lists_every_migration() -> None:
    plan, c = long_plan()
    text = render_plan(plan, c, full=True)
    assert listed_moves(text) == sum(WAVES) and "--all" not in text and "more" not in text


def test_a_rollback_plan_shows_no_bounds_or_saving() -> None:
    """A rollback has no lower bound to meet and saves nothing: it says what it brings back."""
    plan, c = long_plan(algorithm="rollback", power_on=("t2", "t3"))
    text = render_plan(plan, c, approve_hint=False)
    assert "lower bound" not in text and "estimated saving" not in text
    assert "spare hosts" not in text
    assert re.search(r"^power on: +t2, t3$", text, re.M)


def test_a_plan_states_its_distance_from_the_lower_bound() -> None:
    """Every plan says how far it is from the best lower bound it knows."""
    plan, c = long_plan()
    assert "44 -> 4 (lower bound 2: 2 hosts above it)" in render_plan(plan, c)


def test_a_dry_run_plan_points_to_no_command_that_shows_it() -> None:
    """rollback --dry-run pointed to 'plan show ID --all' for a plan it never stored."""
    plan, c = long_plan(algorithm="rollback", power_on=("s00",))
    text = render_plan(plan, c, approve_hint=False, stored=False)
    assert "plan show" not in text
    assert f"({MAX_LISTED} of 120 migrations listed: a dry run stores no plan" in text


def test_the_saving_adds_up_from_what_each_host_draws() -> None:
    """The demo said '6 hosts at 270 W idle each' and then 'saving: 2050 W'."""
    plan, _ = long_plan()
    d = plan.draft
    measured = {h: 300.0 + n for n, h in enumerate(d.power_off[:2])}
    from dataclasses import replace
    d = replace(d, power_off=d.power_off[:3], host_watts=measured,
                watts_basis=dict.fromkeys(measured, "measured"))
    text = saving_summary(d, 3)
    assert "at 270 W idle each" not in text
    assert "3 hosts (measured: s00 300 W, s01 301 W; 270 W idle per host, no reading: s02)" \
        in text
    assert "saving:      871 W" in text


def test_the_host_table_fits_the_terminal_by_narrowing_then_dropping_its_bars() -> None:
    """plan show printed 140 columns whatever the terminal's width."""
    plan, c = long_plan()
    wide = render_plan(plan, c)
    width = max(len(line) for line in wide.splitlines() if line.startswith("s00 "))
    narrow = render_plan(plan, c, width=100)
    row = next(line for line in narrow.splitlines() if line.startswith("s00 "))
    assert len(row) <= 100 < width and "[.....]" in row and "[.........." not in row
    bare = render_plan(plan, c, width=60)
    row = next(line for line in bare.splitlines() if line.startswith("s00 "))
    assert "[" not in row and "->" in row
