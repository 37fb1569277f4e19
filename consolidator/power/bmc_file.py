"""Loading bmc.yaml: its permissions, `defaults:`, passwords (inline or in a password file)
and the keys every protocol shares; each protocol checks its own keys (power/catalog.py)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from consolidator.core.errors import ConfigError
from consolidator.power.catalog import POWER_DRIVERS, protocol_keys
from consolidator.power.driver import BmcConfig, InvalidBmcEntry, KeyTypes
from consolidator.power.secret_file import refuse_unsafe

#: The keys that say which BMC and who logs in to it, shared by every protocol.
_ACCESS_KEYS: dict[str, KeyTypes] = {
    "driver": str, "address": str, "port": int, "username": str, "password": str,
    "password_file": str}
#: The keys that say how long to wait and how often to try, shared by every protocol.
_TIMING_KEYS: dict[str, KeyTypes] = {
    "timeout": (int, float), "grace": (int, float), "read_attempts": int,
    "read_backoff": (int, float)}
#: Numeric keys and the smallest value each accepts.
_MINIMUM = {"port": 1, "grace": 0, "read_attempts": 1, "read_backoff": 0}
#: Numeric keys and the largest value each accepts.
_MAXIMUM = {"port": 65535}


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a mapping that gives a key twice (PyYAML keeps the
    last silently, so a host pasted twice would lose its first entry without a word)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"{key!r} is given twice", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def known_keys() -> dict[str, KeyTypes]:
    """Every key a bmc.yaml entry may hold, in the order an error lists them: the shared
    ones and every protocol's own (`defaults:` may hold keys of several protocols)."""
    return {**_ACCESS_KEYS, **protocol_keys(), **_TIMING_KEYS}


def _file_error(path: Path, where: str, message: str) -> ConfigError:
    return ConfigError(f"{path}: {where}: {message}")


def _check_entry(path: Path, host: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    """Check a merged entry's keys; the driver's options (its validate()'s result)."""
    where = f"host {host!r}"
    keys = known_keys()
    for key, value in entry.items():
        kinds = keys.get(key)
        if kinds is None:
            raise _file_error(path, where, f"unknown key {key!r} (expected one of "
                                           f"{', '.join(keys)})")
        bad_bool = isinstance(value, bool) and kinds is not bool
        if not isinstance(value, kinds) or bad_bool:
            raise _file_error(path, where, f"{key} has the wrong type "
                                           f"({type(value).__name__})")
        if not isinstance(value, (int, float)):
            continue
        if key in _MINIMUM and value < _MINIMUM[key]:
            raise _file_error(path, where, f"{key} must be at least {_MINIMUM[key]}, "
                                           f"got {value}")
        if key in _MAXIMUM and value > _MAXIMUM[key]:
            raise _file_error(path, where, f"{key} must be at most {_MAXIMUM[key]}, "
                                           f"got {value}")
        if key == "timeout" and value <= 0:
            raise _file_error(path, where, f"timeout must be more than 0, got {value}")
    for key in ("driver", "address", "username"):
        if not entry.get(key):
            raise _file_error(path, where, f"missing key {key!r}")
    if entry["driver"] not in POWER_DRIVERS:
        raise _file_error(path, where, f"driver {entry['driver']!r} is not one of "
                                       f"{', '.join(POWER_DRIVERS.names())}")
    protocol = POWER_DRIVERS.get(entry["driver"])
    try:
        return protocol.validate(host, entry, lambda name: _relative_to(path, name))
    except InvalidBmcEntry as exc:
        raise _file_error(path, where, str(exc)) from None


def _relative_to(path: Path, name: str) -> Path:
    """A path named in the BMC file: ~ expanded, relative to the BMC file's directory."""
    target = Path(name).expanduser()
    return target if target.is_absolute() else path.parent / target


def refuse_if_readable(path: Path, what: str, holds: str = "BMC credentials") -> None:
    """ConfigError unless the file holding credentials is as private as ssh wants a key:
    not readable or writable by group or others, owned by the user or root, on a safe path
    (power/secret_file.py)."""
    refuse_unsafe(path, what, holds)


def read_utf8(path: Path, what: str) -> str:
    """The file's text; ConfigError in one line when it cannot be read or is not UTF-8."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the {what}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError.not_utf8(path, exc) from None


def _password(path: Path, host: str, entry: Mapping[str, Any]) -> str:
    if "password" in entry and "password_file" not in entry:
        return str(entry["password"])
    if "password_file" in entry and "password" not in entry:
        secret = _relative_to(path, entry["password_file"])
        refuse_if_readable(secret, f"{path}: host {host!r}: password_file {str(secret)!r}")
        try:
            return secret.read_text(encoding="utf-8").rstrip("\r\n")
        except OSError as exc:
            raise _file_error(path, f"host {host!r}", f"password_file {str(secret)!r} "
                                                      f"cannot be read: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise _file_error(path, f"host {host!r}", f"password_file {str(secret)!r} is not "
                                                      f"UTF-8 text: save it as UTF-8") from None
    if "password" in entry:
        raise _file_error(path, f"host {host!r}", "give password or password_file, not both")
    raise _file_error(path, f"host {host!r}", "missing key 'password' (or 'password_file')")


def _read_document(path: Path) -> Mapping[str, Any]:
    """The parsed file, refused unless private, with its top-level keys checked."""
    text = read_utf8(path, "BMC file")
    refuse_if_readable(path, str(path))
    try:
        doc = yaml.load(text, Loader=_UniqueKeyLoader)     # a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1}" if mark is not None else "YAML"
        problem = getattr(exc, "problem", "") or ""
        if problem.endswith("is given twice"):
            raise ConfigError(f"{path}: {at}: {problem}: keep one") from None
        raise ConfigError(f"{path}: {at}: not valid YAML") from None
    if not isinstance(doc, Mapping) or not isinstance(doc.get("hosts"), Mapping):
        raise ConfigError(f"{path}: expected a mapping with a 'hosts' mapping")
    unknown = set(doc) - {"hosts", "defaults"}
    if unknown:
        raise ConfigError(f"{path}: unknown top-level key {sorted(unknown)[0]!r}")
    return doc


def load_bmc_file(path: str | Path) -> dict[str, BmcConfig]:
    """Read a bmc.yaml: host name -> BmcConfig, `defaults:` merged under each host."""
    path = Path(path)
    doc = _read_document(path)
    defaults = doc.get("defaults") or {}
    if not isinstance(defaults, Mapping):
        raise ConfigError(f"{path}: defaults: expected a mapping")
    configs = {}
    for host, raw in doc["hosts"].items():
        host = str(host)
        if not isinstance(raw, Mapping):
            raise _file_error(path, f"host {host!r}", "expected a mapping")
        entry = dict(defaults)
        if "password" in raw or "password_file" in raw:
            entry.pop("password", None)
            entry.pop("password_file", None)
        entry.update(raw)
        options = _check_entry(path, host, entry)
        configs[host] = BmcConfig(
            host=host, driver=entry["driver"], address=entry["address"],
            port=entry.get("port"), username=entry["username"],
            password=_password(path, host, entry),
            timeout=float(entry.get("timeout", 30.0)),
            grace=float(entry.get("grace", 120.0)),
            read_attempts=entry.get("read_attempts", 3),
            read_backoff=float(entry.get("read_backoff", 0.5)), options=options)
    return configs
