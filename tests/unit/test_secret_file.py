"""Issue 45, item 6: bmc.yaml at mode 0622, 0620 or 0602, a password_file at 0602 and a
symlink in a world-writable folder were accepted: only reading by others was checked. Secret
files are now checked as OpenSSH's safe_path checks a key (writable by no one but the owner,
owned by the user or root, on a path of safe folders, not through a symlink anyone may
replace), each refusal one line naming the file and the fix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from consolidator.app.config import load_config
from consolidator.core.errors import ConfigError
from consolidator.power.bmc_file import load_bmc_file
from tests.functional.cli import run

SECRET = "s3cr3t-do-not-print"
ENTRY = f"hosts: {{c1: {{driver: ipmi, address: a, username: u, password: {SECRET}}}}}\n"
NOBODY = 65534


def private_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "private"
    folder.mkdir(mode=0o700)
    return folder


def bmc_yaml(folder: Path, text: str = ENTRY, mode: int = 0o600) -> Path:
    path = folder / "bmc.yaml"
    path.write_text(text)
    path.chmod(mode)
    return path


def refusal(path: Path) -> str:
    with pytest.raises(ConfigError) as err:
        load_bmc_file(path)
    message = str(err.value)
    assert "\n" not in message and SECRET not in message
    return message


@pytest.mark.parametrize("mode", [0o622, 0o620, 0o602, 0o420, 0o402], ids=oct)
def test_a_bmc_file_others_may_change_is_refused(tmp_path: Path, mode: int) -> None:
    path = bmc_yaml(private_folder(tmp_path), mode=mode)
    message = refusal(path)
    assert message.startswith(str(path)) and f"mode {mode:04o}" in message
    assert "writable by group or others" in message or "readable by group or others" \
        in message
    assert message.endswith(f"chmod 600 {path}")
    path.chmod(0o600)
    assert set(load_bmc_file(path)) == {"c1"}


def test_a_password_file_others_may_change_is_refused(tmp_path: Path) -> None:
    folder = private_folder(tmp_path)
    secret = folder / "c1.pass"
    secret.write_text(SECRET)
    secret.chmod(0o602)
    path = bmc_yaml(folder, "hosts: {c1: {driver: ipmi, address: a, username: u, "
                            "password_file: c1.pass}}\n")
    message = refusal(path)
    assert message.startswith(f"{path}: host 'c1': password_file '{secret}'")
    assert "writable by group or others (mode 0602)" in message
    assert message.endswith(f"chmod 600 {secret}")
    secret.chmod(0o600)
    assert load_bmc_file(path)["c1"].password == SECRET


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user "
                                              "(CI runs as root)")
def test_a_bmc_file_or_folder_of_another_user_is_refused(tmp_path: Path) -> None:
    folder = private_folder(tmp_path)
    path = bmc_yaml(folder)
    os.chown(path, NOBODY, NOBODY)
    message = refusal(path)
    assert f"owned by uid {NOBODY}, neither you (uid 0) nor root" in message
    assert message.endswith(f"chown 0 {path} && chmod 600 {path}")
    os.chown(path, 0, 0)
    os.chown(folder, NOBODY, NOBODY)
    assert f"is in the folder {folder}, owned by uid {NOBODY}" in refusal(path)
    os.chown(folder, 0, 0)
    assert set(load_bmc_file(path)) == {"c1"}


def test_a_folder_anyone_may_write_without_the_sticky_bit_is_refused(tmp_path: Path) -> None:
    folder = private_folder(tmp_path)
    path = bmc_yaml(folder)
    folder.chmod(0o777)
    message = refusal(path)
    assert f"in the folder {folder}, writable by group or others (mode 0777) without the " \
           f"sticky bit" in message
    assert message.endswith(f"chmod go-w {folder}")
    folder.chmod(0o1777)                 # sticky, as /tmp: only the file's owner replaces it
    assert set(load_bmc_file(path)) == {"c1"}


def test_a_symlink_in_a_world_writable_folder_is_refused(tmp_path: Path) -> None:
    path = bmc_yaml(private_folder(tmp_path))
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    link = shared / "bmc.yaml"
    link.symlink_to(path)
    message = refusal(link)
    assert f"reached through the symlink {link} in the world-writable folder {shared}" \
        in message
    assert f"name the real file ({path})" in message
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    (mine / "bmc.yaml").symlink_to(path)
    assert set(load_bmc_file(mine / "bmc.yaml")) == {"c1"}


def test_a_config_holding_a_secret_that_others_may_change_is_refused(tmp_path: Path) -> None:
    config = private_folder(tmp_path) / "consolidator.conf"
    config.write_text("[notify]\nwebhook_url = http://127.0.0.1:1/\nsecret = s3cret\n")
    config.chmod(0o602)
    with pytest.raises(ConfigError, match=r"writable by group or others \(mode 0602\) and "
                                          r"holds \[notify\] secret"):
        load_config(config, required=True)
    config.chmod(0o600)
    load_config(config, required=True)


def test_bmc_check_says_which_file_and_how_to_fix_it(tmp_path: Path) -> None:
    from tests.functional.served import served_cloud

    scenario = {"hosts": [{"name": "c1", "vcpus": 4, "memory_mb": 4096, "disk_gb": 10,
                           "bmc": {"driver": "redfish"}}], "instances": []}
    with served_cloud(scenario, private_folder(tmp_path)) as served:
        assert served.bmc_yaml is not None
        served.bmc_yaml.chmod(0o622)
        checked = run("--cloud", served.cloud_name, "bmc-check", "--bmc-file",
                      str(served.bmc_yaml), db_url=f"sqlite:///{tmp_path / 'c.db'}",
                      env={"OS_CLIENT_CONFIG_FILE": str(served.clouds_yaml)})
    assert checked.code == 1
    lines = checked.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in checked.err, checked.err
    assert lines[0].startswith(f"consolidator: error: {served.bmc_yaml} is writable by "
                               f"group or others (mode 0622)")
    assert lines[0].endswith(f"chmod 600 {served.bmc_yaml}")
