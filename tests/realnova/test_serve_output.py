"""What 'fake-cloud serve --backend nova' prints (issue 27): how its boot goes, and none of
Nova's INFO lines on stdout when it stops with --log-file (they all go to the file), nor
eventlet's deprecation warnings when it starts."""

from __future__ import annotations

from pathlib import Path

from consolidator.emulators.fake.process import stop_child
from tests.realnova.served import served_nova


def test_serve_says_how_the_boot_goes_and_keeps_nova_s_info_lines_in_its_log(
        tmp_path: Path) -> None:
    doc = {"hosts": [{"name": f"q{n}", "vcpus": 8, "memory_mb": 16384, "disk_gb": 100}
                     for n in (1, 2)],
           "instances": [{"name": f"vm{n}", "host": f"q{n}", "vcpus": 1, "memory_mb": 512,
                          "disk_gb": 1} for n in (1, 2)]}
    with served_nova(doc, tmp_path) as served:
        stop_child(served.process, timeout=30)   # SIGINT/SIGTERM, as Ctrl-C
    printed = (tmp_path / "served.out").read_text()
    assert "booted 2 of 2 servers (" in printed
    assert "real Nova stopped" in printed
    assert " INFO " not in printed, printed
    # nor the 11 lines of eventlet deprecation Nova's test harness printed at the start
    assert "Eventlet" not in printed and "monkey patching" not in printed, printed
    assert " INFO " in (tmp_path / "nova.log").read_text()
