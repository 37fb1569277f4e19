"""[notify] transport_url, topic, webhook_format and queue_size: checked when the config is
read; oslo.messaging is the notify extra, so a transport URL without it is one line naming
the extra, and the product imports and runs webhooks without it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from consolidator.app.config import load_config
from consolidator.app.settings import notify_settings
from consolidator.cli import main
from consolidator.core.errors import ConfigError

URL = "rabbit://consolidator:s3cret@127.0.0.1:5672/"


def write(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "consolidator.conf"
    path.write_text(text)
    path.chmod(mode)
    return path


def test_the_defaults_send_nothing_to_a_bus(tmp_path: Path) -> None:
    settings = notify_settings(load_config(write(tmp_path, "[notify]\n")))
    assert settings.transport_url == "" and settings.topic == "versioned_notifications"
    assert settings.webhook_format == "cloudevents" and settings.queue_size == 1000


def test_a_transport_url_and_topic_are_read(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, f"[notify]\ntransport_url = {URL}\ntopic = ops\n"
                                         "queue_size = 50\nwebhook_format = legacy\n"))
    settings = notify_settings(config)
    assert (settings.transport_url, settings.topic, settings.queue_size,
            settings.webhook_format) == (URL, "ops", 50, "legacy")


@pytest.mark.parametrize("line, words", [
    ("transport_url = 127.0.0.1:5672", "not an oslo.messaging transport URL"),
    ("webhook_format = json", "cloudevents"),
    ("queue_size = 0", "queue_size"),
])
def test_a_bad_value_is_one_line(tmp_path: Path, line: str, words: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, f"[notify]\n{line}\n"))
    assert words in str(info.value) and "\n" not in str(info.value)


def test_a_password_in_the_transport_url_needs_an_owner_only_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"a password in \[notify\] transport_url"):
        load_config(write(tmp_path, f"[notify]\ntransport_url = {URL}\n", mode=0o644))


@pytest.fixture
def no_oslo_messaging(monkeypatch: pytest.MonkeyPatch) -> None:
    """An install without the notify extra: importing oslo_messaging fails as it would."""
    for name in [n for n in sys.modules if n.split(".")[0] == "oslo_messaging"]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "oslo_messaging", None)


def test_a_transport_url_without_oslo_messaging_names_the_extra(
        no_oslo_messaging: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write(tmp_path, f"[notify]\ntransport_url = {URL}\n")
    code = main(["--config", str(config), "--db-url", f"sqlite:///{tmp_path / 'c.db'}",
                 "snapshots", "list"])
    err = capsys.readouterr().err
    assert code == 1, err                    # as a PostgreSQL URL without psycopg
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "pip install 'consolidator[notify]'" in err and "s3cret" not in err


def test_the_product_imports_without_oslo_messaging() -> None:
    code = ("import sys; sys.modules['oslo_messaging'] = None\n"
            "import consolidator.cli, consolidator.app.notify, consolidator.daemon\n"
            "import consolidator.telemetry.webhook, consolidator.telemetry.bus\n"
            "from consolidator.telemetry.webhook import cloud_event\n"
            "body, kind = cloud_event({'event': 'plan.approved', 'sequence': 3,"
            " 'plan_id': 'p'})\n"
            "assert kind == 'application/cloudevents+json', kind\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300, check=False)
    assert result.returncode == 0, result.stderr


def test_a_transport_oslo_messaging_does_not_know_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write(tmp_path, "[notify]\ntransport_url = nosuch://u:s3cret@127.0.0.1:5672/\n")
    code = main(["--config", str(config), "--db-url", f"sqlite:///{tmp_path / 'c.db'}",
                 "snapshots", "list"])
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.count("\n") == 1 and "Traceback" not in err and "s3cret" not in err
    assert err.startswith("consolidator: error: [notify] transport_url: "), err
