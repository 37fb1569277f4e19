"""Files that hold secrets (bmc.yaml, a password_file, a config holding [notify] secret or a
database password), checked as OpenSSH's safe_path checks a key: no one but the owner may read
or change the file, it belongs to the current user or root, and so does every folder on its
real path, none writable by group or others unless sticky (/tmp); and it is not reached
through a symlink in a world-writable folder, where anyone could point it elsewhere."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from consolidator.core.errors import ConfigError


def refuse_unsafe(path: Path, what: str, holds: str) -> None:
    """ConfigError, one line naming the file and the fix, unless the secret file is safe.
    A file that cannot be stat'ed passes: reading it reports why."""
    path = Path(os.path.abspath(path))
    _refuse_symlink_in_shared_folder(path, what)
    try:
        info = path.stat()
    except OSError:
        return
    mode = stat.S_IMODE(info.st_mode)
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        raise ConfigError(f"{what} is readable by group or others (mode {mode:04o}) and holds "
                          f"{holds}; refusing it: chmod 600 {path}")
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ConfigError(f"{what} is writable by group or others (mode {mode:04o}) and holds "
                          f"{holds}; refusing it: chmod 600 {path}")
    if not _trusted(info.st_uid):
        raise ConfigError(f"{what} is owned by uid {info.st_uid}, neither you (uid "
                          f"{os.geteuid()}) nor root, and holds {holds}; refusing it: "
                          f"chown {os.geteuid()} {path} && chmod 600 {path}")
    _refuse_unsafe_folders(path.resolve().parent, what)


def _trusted(uid: int) -> bool:
    return uid in (0, os.geteuid())


def _refuse_symlink_in_shared_folder(path: Path, what: str) -> None:
    """A symlink on the path as given, in a world-writable folder: whoever can write there
    can point it at a file of their own."""
    current = Path(path.anchor)
    for part in path.parts[1:]:
        folder, current = current, current / part
        try:
            if not current.is_symlink():
                continue
            shared = folder.stat().st_mode & stat.S_IWOTH
        except OSError:
            return
        if shared:
            raise ConfigError(f"{what} is reached through the symlink {current} in the "
                              f"world-writable folder {folder}, which anyone may replace; "
                              f"refusing it: name the real file ({current.resolve()}), or move "
                              f"the link to a private folder")
        current = current.resolve()


def _refuse_unsafe_folders(folder: Path, what: str) -> None:
    """Every folder from the file's up to /: owned by the user or root, and not writable by
    group or others unless sticky (then only an entry's owner may replace it)."""
    for current in (folder, *folder.parents):
        try:
            info = current.stat()
        except OSError:
            return
        mode = stat.S_IMODE(info.st_mode)
        if not _trusted(info.st_uid):
            raise ConfigError(f"{what} is in the folder {current}, owned by uid {info.st_uid}, "
                              f"neither you nor root, who could replace it; refusing it: move "
                              f"the file to a folder of yours")
        if mode & (stat.S_IWGRP | stat.S_IWOTH) and not mode & stat.S_ISVTX:
            raise ConfigError(f"{what} is in the folder {current}, writable by group or "
                              f"others (mode {mode:04o}) without the sticky bit, so anyone "
                              f"may replace it; refusing it: chmod go-w {current}")
