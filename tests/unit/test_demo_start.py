"""demo --backend nova (issue 34): it claimed "about two minutes" (it took 9.5 minutes on a
quiet machine, 176 s of them to boot), failed at a fixed 600 s start-up limit on a loaded
machine, and said "fake cloud" while it ran the real Nova."""

from __future__ import annotations

from click.testing import CliRunner

from consolidator.demo import STILL_STARTING_S, StartWatch, served_name


def test_each_progress_line_restarts_the_start_up_clock() -> None:
    now = [0.0]
    watch = StartWatch(600.0, clock=lambda: now[0])
    for booted in range(1, 21):          # a boot that takes 20 x 500 s, with progress each time
        now[0] = booted * 500.0
        assert not watch.expired()
        watch.progressed()
    now[0] += 600.5
    assert watch.expired()


def test_a_silent_start_says_it_is_still_starting() -> None:
    now = [0.0]
    watch = StartWatch(600.0, clock=lambda: now[0])
    said = []
    for tick in range(int(3 * STILL_STARTING_S) + 1):
        now[0] = float(tick)
        line = watch.still_starting()
        if line:
            said.append(line)
    assert said == [f"still starting ({STILL_STARTING_S * n:.0f} s)" for n in (1, 2, 3)]


def test_the_nova_demo_names_what_it_runs_and_how_long_it_takes() -> None:
    from consolidator.cli.demo import demo_cmd

    assert served_name("nova") == "the real Nova and Placement"
    assert served_name("fake") == "the fake cloud"
    shown = CliRunner().invoke(demo_cmd, ["--help"], terminal_width=200)
    text = " ".join(shown.output.split())
    assert "about two minutes" not in text
    assert "176 s" in text and "--start-timeout SECONDS" in text


def test_a_server_that_did_not_start_is_quoted_without_its_own_prefix() -> None:
    """The demo's line already begins 'consolidator: error: demo failed at step 1': the
    served cloud's last line is quoted without its own 'consolidator: error: '."""
    from consolidator.demo import last_word

    said = "consolidator: error: --backend nova needs Nova: pip install 'consolidator[realnova]'"
    assert last_word(f"starting\n{said}\n") == \
        "--backend nova needs Nova: pip install 'consolidator[realnova]'"
    assert last_word("Traceback ...\nOSError: boom\n") == "OSError: boom"
    assert last_word("") == "no output"


def test_a_kept_demo_says_where_its_database_is() -> None:
    """With --db-url (or CONSOLIDATOR_DB_URL) the demo's database is that one, not a file in
    the kept directory; the line said 'kept DIR: the database, ...' all the same."""
    from pathlib import Path

    from consolidator.demo import DemoOptions, kept_lines

    own = kept_lines(Path("/tmp/d"), DemoOptions(keep=True))
    assert own[0].startswith("kept /tmp/d: the database (demo.db), clouds.yaml")
    assert "consolidator --config /tmp/d/consolidator.conf plans list" in own[1]
    named = kept_lines(Path("/tmp/d"), DemoOptions(keep=True,
                                                   db_url="postgresql://u:secret@db/c"))
    assert named[0].startswith("kept /tmp/d: clouds.yaml") and "database" not in named[0]
    assert "postgresql://u:***@db/c" in named[1] and "secret" not in " ".join(named)
