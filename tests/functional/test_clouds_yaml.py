"""clouds.yaml problems and unreachable clouds: one line naming the problem and its fix.

Each case runs the real command against real openstacksdk, with local listeners on
127.0.0.1 standing in for a Keystone that refuses connections or never answers.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from tests.functional.cli import Result, run

#: A deadline for commands that must give up on their own within seconds; generous for a
#: loaded machine, far below "forever".
QUICK_S = 120.0


def entry(auth_url: str, **extra: object) -> dict[str, object]:
    """A clouds.yaml entry for auth_url."""
    return {"auth_type": "password",
            "auth": {"auth_url": auth_url, "username": "admin", "password": "secret",
                     "project_name": "admin", "user_domain_name": "Default",
                     "project_domain_name": "Default"},
            **extra}


def write_clouds(path: Path, cloud: dict[str, object]) -> Path:
    path.write_text(yaml.safe_dump({"clouds": {"fake": cloud}}))
    return path


def hosts_list(tmp_path: Path, clouds: Path | None, timeout: float = QUICK_S) -> Result:
    """`consolidator hosts list` for cloud 'fake', with HOME and the cwd in tmp_path."""
    env = {"HOME": str(tmp_path), "OS_CLOUD": "fake"}
    if clouds is not None:
        env["OS_CLIENT_CONFIG_FILE"] = str(clouds)
    return run("hosts", "list", cwd=tmp_path, env=env, timeout=timeout)


def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def silent_listener() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def hold() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    try:
        yield int(server.getsockname()[1])
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        server.close()


def one_error_line(result: Result) -> str:
    """The command's only stderr line, checked to be an error and not a crash."""
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "unexpected error" not in result.err, result.err
    assert result.code == 1, result.err
    return lines[0]


@pytest.mark.parametrize(("text", "problem"), [
    ("clouds:\n  fake:\n    auth: 5\n", "cloud 'fake': 'auth' must be a mapping"),
    ("clouds: 5\n", "'clouds' must be a mapping of cloud names to their entries"),
    ("clouds:\n  fake: 5\n", "cloud 'fake' must be a mapping"),
    ("- fake\n", "the top level must be a mapping with a 'clouds' key"),
    ("clouds:\n  fake:\n    api_timeout: soon\n",
     "cloud 'fake': 'api_timeout' must be a number of seconds"),
])
def test_a_clouds_yaml_of_wrong_types_is_one_line_naming_it(
        tmp_path: Path, text: str, problem: str) -> None:
    """`auth: 5` was 'unexpected error: TypeError: 'int' object is not iterable'; `clouds: 5`
    'TypeError: argument of type 'int' is not iterable'."""
    clouds = tmp_path / "mine.yaml"
    clouds.write_text(text)
    line = one_error_line(hosts_list(tmp_path, clouds))
    assert line.startswith(f"consolidator: error: clouds.yaml {clouds}: {problem}"), line


def test_a_clouds_yaml_that_is_not_yaml_is_refused_not_skipped(tmp_path: Path) -> None:
    """OS_CLIENT_CONFIG_FILE naming a malformed file was skipped with no word: 'Cloud fake was
    not found', or (a valid ./clouds.yaml in the cwd) that other file used, exit code 0."""
    write_clouds(tmp_path / "clouds.yaml", entry(f"http://127.0.0.1:{closed_port()}/v3"))
    clouds = tmp_path / "mine.yaml"
    clouds.write_text("clouds:\n  fake: [\n")
    line = one_error_line(hosts_list(tmp_path, clouds))
    assert line.startswith(f"consolidator: error: {clouds}: line 3: not valid YAML ("), line


def test_an_unreachable_cloud_is_one_short_line(tmp_path: Path) -> None:
    """An auth_url with nothing listening (versions discovered from its root) gave ~500
    characters: 'cannot reach or discover the auth URL while negotiating ...
    HTTPConnectionPool(...): Max retries exceeded ... [Errno 111] Connection refused'."""
    url = f"http://127.0.0.1:{closed_port()}"
    clouds = write_clouds(tmp_path / "mine.yaml", entry(url))
    line = one_error_line(hosts_list(tmp_path, clouds))
    assert line == (f"consolidator: error: cloud 'fake': cannot connect to {url} (connection "
                    f"refused): check auth_url in the clouds.yaml entry 'fake'"), line


def test_a_cloud_that_never_answers_times_out_at_its_api_timeout(tmp_path: Path) -> None:
    """A Keystone that accepts and never answers: api_timeout in clouds.yaml bounds the wait,
    and the line says so and how to change it."""
    with silent_listener() as port:
        url = f"http://127.0.0.1:{port}"
        clouds = write_clouds(tmp_path / "mine.yaml", entry(url, api_timeout=1))
        line = one_error_line(hosts_list(tmp_path, clouds))
    assert line == (f"consolidator: error: cloud 'fake': {url} did not answer within 1 s: "
                    f"check that it is up, or raise api_timeout in the clouds.yaml entry "
                    f"'fake' (default 60 s)"), line


def test_a_cloud_without_api_timeout_gets_the_default(tmp_path: Path) -> None:
    """With no api_timeout in clouds.yaml the wait had no bound: the command, and the daemon,
    hung forever. The default (lowered here to 1 s so that the test is quick) bounds it."""
    with silent_listener() as port:
        clouds = write_clouds(tmp_path / "mine.yaml", entry(f"http://127.0.0.1:{port}"))
        env = {k: v for k, v in os.environ.items() if not k.startswith("OS_")}
        env.update(HOME=str(tmp_path), OS_CLOUD="fake", OS_CLIENT_CONFIG_FILE=str(clouds))
        code = ("import consolidator.openstack.connection as c; c.DEFAULT_API_TIMEOUT_S = 1; "
                "from consolidator.cli import main; raise SystemExit(main(['hosts', 'list']))")
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              cwd=tmp_path, env=env, timeout=QUICK_S)
    line = one_error_line(Result(proc.returncode, proc.stdout, proc.stderr))
    assert "did not answer within 1 s" in line, line


def test_the_api_timeout_of_clouds_yaml_wins_over_the_default(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """The default is only for entries that set none."""
    from consolidator.openstack.connection import DEFAULT_API_TIMEOUT_S, connect

    clouds = tmp_path / "clouds.yaml"
    clouds.write_text(yaml.safe_dump({"clouds": {
        "own": entry("http://127.0.0.1:9/v3", api_timeout=7),
        "none": entry("http://127.0.0.1:9/v3")}}))
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(clouds))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert connect("own").config.config["api_timeout"] == 7
    assert connect("none").config.config["api_timeout"] == DEFAULT_API_TIMEOUT_S == 60
