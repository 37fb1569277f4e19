"""What the dashboard's pages show, from the API's documents: tiles by recorded state and
their filters, a plan's hosts before and after and its waves, a job's moves, the charts."""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET

from consolidator.api.dashboard import charts, pages
from consolidator.api.dashboard.cookie import Box, Session
from consolidator.core.host_gate import STATES


def host(name: str, **extra: object) -> dict[str, object]:
    return {"name": name, "availability_zone": "east", "aggregates": [], "vcpus": 16,
            "instances": 2, "power": "on", "recorded_state": None, **extra}


def test_every_recorded_state_has_its_colour() -> None:
    assert tuple(pages.STATES) == STATES
    assert len(set(pages.STATES.values())) == len(STATES)


def test_tiles_are_coloured_by_state_and_filtered() -> None:
    rows = [host("a", recorded_state="draining", aggregates=["gold"]),
            host("b", power="off"), host("c", availability_zone="west"),
            host("d", recorded_state="held by the operator", vcpus_used=8,
                 vcpus_capacity=16, memory_mb_used=0, memory_mb_capacity=1024)]
    page = pages.hosts_page(rows)
    assert [(z, n) for z, n, _ in page.groups] == [("east", 3), ("west", 1)]
    markup = "".join(str(m) for _, _, m in page.groups)
    assert 'class="tile s-draining"' in markup and 'class="tile s-off"' in markup
    assert 'class="tile s-held"' in markup and "CPU 50% · RAM 0%" in markup
    assert dict((s, n) for s, _, n in page.counts)["in service"] == 1
    gold = pages.hosts_page(rows, aggregate="gold")
    assert (gold.shown, gold.total) == (1, 4)
    assert pages.hosts_page(rows, zone="west").shown == 1


def test_a_tile_shows_cpu_and_memory_usage_in_words() -> None:
    """Usage from the newest snapshot: the share of capacity in use, in words on the tile
    (what a screen reader reads), and in full in the tooltip; a host the API gives no usage
    for says only what it has."""
    busy = pages.tile(host("c1", vcpus_used=12, vcpus_capacity=16, memory_mb_used=8192,
                           memory_mb_capacity=32768))
    assert busy.usage == "CPU 75% · RAM 25%"
    assert ("<b>c1</b><span>in service · 2 inst.</span><span>CPU 75% · RAM 25%</span>"
            in str(pages.tiles_markup([busy])))
    assert busy.title.endswith("; CPU 12 of 16 vCPUs, memory 8 of 32 GiB in use")
    over = pages.tile(host("c2", vcpus_used=40, vcpus_capacity=32, memory_mb_used=0,
                           memory_mb_capacity=1024))
    assert over.usage == "CPU 125% · RAM 0%"                  # overcommitted, as it is
    bare = pages.tile(host("c3"))
    assert (bare.usage, bare.title) == ("16 vCPU", "zone east")


def test_a_host_name_is_escaped_in_its_tile() -> None:
    markup = str(pages.tiles_markup([pages.tile(host("<b>x</b>"))]))
    assert "<b>x</b>" not in markup.replace("<b>&lt;", "") and "&lt;b&gt;x" in markup


def test_a_plan_shows_each_host_before_and_after_and_its_waves() -> None:
    plan = {"migrations": [
        {"instance_id": "1", "instance_name": "v1", "source": "c3", "destination": "c1",
         "wave": 1},
        {"instance_id": "2", "instance_name": "v2", "source": "c3", "destination": "c2",
         "wave": 2}],
        "power_off": ["c3"], "hosts_before": 3, "hosts_after": 2, "lower_bound": 2,
        "watts_saved": 120.0}
    page = pages.plan_page(plan, [host("c1"), host("c2"), host("c3")])
    assert [(h.name, h.before, h.after, h.powered_off) for h in page.hosts] == [
        ("c1", 2, 3, False), ("c2", 2, 3, False), ("c3", 2, 0, True)]
    assert [(w, len(m)) for w, m in page.waves] == [(1, 1), (2, 1)]
    figures = dict(page.figures)
    assert (figures["Hosts freed"], figures["Migrations"], figures["Watts saved"]) == (
        1, 2, 120.0)


def test_a_jobs_moves_take_their_newest_journal_state() -> None:
    plan = {"migrations": [{"instance_id": "i1", "instance_name": "v1", "source": "a",
                            "destination": "b", "wave": 1},
                           {"instance_id": "i2", "instance_name": "v2", "source": "a",
                            "destination": "b", "wave": 1}]}
    journal = [{"id": 2, "action": "migrate", "target": "i1", "state": "succeeded"},
               {"id": 1, "action": "migrate", "target": "i1", "state": "running"},
               {"id": 3, "action": "disable", "target": "a", "state": "succeeded"}]
    moves = pages.job_moves(plan, journal)
    assert [(m.instance, m.state) for _, w in moves.waves for m in w] == [
        ("v1", "succeeded"), ("v2", "waiting")]
    assert (moves.done, moves.total) == (1, 2)


def test_the_charts_are_svg_with_a_title_and_focusable_points() -> None:
    svg = charts.front([charts.FrontPoint("a: 1 freed", 1, 3, "?pick=a:0", False),
                        charts.FrontPoint("a: 2 freed", 2, 9, "?pick=a:1", True)])
    root = ET.fromstring(str(svg))
    ns = "{http://www.w3.org/2000/svg}"
    assert root.find(f"{ns}title") is not None
    links = root.findall(f"{ns}a")
    assert [a.get("href") for a in links] == ["?pick=a:0", "?pick=a:1"]
    assert links[1].get("class") == "point picked"
    for chart in (charts.step_line([("t0", 4), ("t1", 3)], title="t", y_label="y", ident="s"),
                  charts.bars([("x", 0.4)], title="t", y_label="y", ident="b")):
        ET.fromstring(str(chart))          # well-formed


def test_a_session_cookie_is_sealed_and_expires() -> None:
    box = Box()
    alive = Session(token="tok", expires_at=time.time() + 60, user_id="u", user_name="n",
                    project_id="p", project_name="p", roles=("reader",))
    sealed = box.seal(alive)
    assert "tok" not in sealed and box.open(sealed) == alive
    assert Box().open(sealed) is None                       # another key: not ours
    assert box.open(sealed[:-2] + "xx") is None
    gone = Session(**{**alive.__dict__, "expires_at": time.time() - 1})
    assert box.open(box.seal(gone)) is None
    assert alive.csrf_ok(alive.csrf) and not alive.csrf_ok("") and not alive.csrf_ok(None)


def test_the_wheel_ships_every_template_script_and_style() -> None:
    """package_data's globs cover every file of the dashboard's templates/ and static/, and
    no page names anything outside them (the dashboard works with no network beyond the
    API)."""
    import configparser
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    cfg = configparser.ConfigParser()
    cfg.read(root / "setup.cfg")
    package = root / "consolidator"
    shipped = {p for pattern in cfg["options.package_data"]["consolidator"].split()
               for p in package.glob(pattern) if p.is_file()}
    board = package / "api" / "dashboard"
    files = {p for folder in ("templates", "static") for p in (board / folder).rglob("*")
             if p.is_file()}
    assert files and files <= shipped, sorted(str(p) for p in files - shipped)
    for path in files:
        text = path.read_text()
        assert re.findall(r"(?:src|href|url)\s*[=(]\s*[\"']?(?:https?:)?//", text) == [], path
        assert "@import" not in text and "@font-face" not in text, path
