"""The power driver protocol, BMC credentials (bmc.yaml) and the driver registry."""

from __future__ import annotations

import logging
import stat
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import tenacity
import yaml

from consolidator.core.errors import ConfigError, ConsolidatorError
from consolidator.core.registry import Registry

log = logging.getLogger(__name__)

T = TypeVar("T")
POWER_ON, POWER_OFF, POWER_UNKNOWN = "on", "off", "unknown"
_KEYS = {"driver": str, "address": str, "port": int, "username": str, "password": str,
         "password_file": str, "verify_tls": bool, "ca_bundle": str,
         "allow_insecure_http": bool, "system_id": str, "timeout": (int, float),
         "grace": (int, float), "read_attempts": int, "read_backoff": (int, float)}
#: Numeric keys and the smallest value each accepts.
_MINIMUM = {"port": 1, "grace": 0, "read_attempts": 1, "read_backoff": 0}
#: The longest wait between two attempts of a BMC read, whatever read_backoff says.
MAX_READ_BACKOFF_S = 10.0


class PowerError(ConsolidatorError):
    """A BMC call failed: "<host>: <driver> BMC <address>: <cause>" (never the password)."""


class TransientPowerError(PowerError):
    """A BMC call failed in a way worth retrying: no answer, a timeout, HTTP 5xx, node busy."""


class ForceWithheld(ConsolidatorError):
    """The forced power-off after a graceful request was not sent: the re-check before it
    found a reason (the message)."""


#: Asked after the graceful request, right before forcing: why not to force, or None.
BeforeForce = Callable[[], "str | None"]


@dataclass(frozen=True)
class BmcConfig:
    """How to reach one host's BMC."""

    host: str
    driver: str
    address: str
    port: int | None
    username: str
    password: str = field(repr=False)
    verify_tls: bool = True
    system_id: str | None = None
    timeout: float = 30.0
    #: Redfish: a CA bundle (file or directory) to verify the BMC's certificate with.
    ca_bundle: str | None = None
    #: Redfish: accept a plain http:// address (credentials then cross the wire in clear).
    allow_insecure_http: bool = False
    #: Seconds between a graceful shutdown and the forced power-off, unless a caller says.
    grace: float = 120.0
    #: Tries of a power-state read before a transient failure counts (1: no retry).
    read_attempts: int = 3
    #: Seconds before the second try of a read; doubled before each later one.
    read_backoff: float = 0.5

    def error(self, cause: str, *, transient: bool = False) -> PowerError:
        """A PowerError naming this host, driver and address (TransientPowerError if so)."""
        kind = TransientPowerError if transient else PowerError
        return kind(f"{self.host}: {self.driver} BMC {self.address}: {cause}")

    @property
    def tls_verify(self) -> bool | str:
        """What TLS verification uses: the CA bundle's path, else verify_tls."""
        return self.ca_bundle if self.ca_bundle and self.verify_tls else self.verify_tls


class PowerDriver(Protocol):
    """What every power driver offers; end states are verified against the BMC."""

    host: str

    def power_state(self) -> str:
        """'on', 'off' or 'unknown'."""
        ...

    def power_on(self, *, timeout: float = 300.0) -> str:
        """Power on and wait until the BMC reports 'on'; returns it."""
        ...

    def power_off(self, *, graceful: bool = True, timeout: float = 300.0,
                  grace: float | None = None, before_force: BeforeForce | None = None) -> str:
        """Shut down gracefully, force after `grace` s (None: config.grace); wait for 'off'.
        If before_force gives a reason when the grace is over, raise ForceWithheld instead
        of forcing."""
        ...


class PowerMeter(Protocol):
    """An optional capability of a power driver: the host's power draw as its BMC reads it."""

    host: str

    def power_watts(self) -> float | None:
        """Watts drawn now; None when the BMC has no reading (e.g. the host is off)."""
        ...


def read_watts(driver: object) -> float | None:
    """The draw a driver's BMC reports, or None: no meter, no reading, or a failure (logged
    in one line; a missing reading is never an error)."""
    meter = getattr(driver, "power_watts", None)
    if meter is None:
        return None
    try:
        watts = meter()
    except ConsolidatorError as exc:
        log.info("no power reading: %s", exc)
        return None
    return None if watts is None or watts < 0 else float(watts)


def _file_error(path: Path, where: str, message: str) -> ConfigError:
    return ConfigError(f"{path}: {where}: {message}")


def _check_entry(path: Path, host: str, entry: Mapping[str, Any]) -> None:
    where = f"host {host!r}"
    for key, value in entry.items():
        kinds = _KEYS.get(key)
        if kinds is None:
            raise _file_error(path, where, f"unknown key {key!r} (expected one of "
                                           f"{', '.join(_KEYS)})")
        bad_bool = isinstance(value, bool) and kinds is not bool
        if not isinstance(value, kinds) or bad_bool:  # type: ignore[arg-type]
            raise _file_error(path, where, f"{key} has the wrong type "
                                           f"({type(value).__name__})")
        if key in _MINIMUM and value < _MINIMUM[key]:
            raise _file_error(path, where, f"{key} must be at least {_MINIMUM[key]}, "
                                           f"got {value}")
        if key == "timeout" and value <= 0:
            raise _file_error(path, where, f"timeout must be more than 0, got {value}")
    for key in ("driver", "address", "username"):
        if not entry.get(key):
            raise _file_error(path, where, f"missing key {key!r}")
    if entry["driver"] not in POWER_DRIVERS:
        raise _file_error(path, where, f"driver {entry['driver']!r} is not one of "
                                       f"{', '.join(POWER_DRIVERS.names())}")
    if entry["driver"] == "redfish":
        _check_redfish_tls(path, host, entry)


def _relative_to(path: Path, name: str) -> Path:
    """A path named in the BMC file: ~ expanded, relative to the BMC file's directory."""
    target = Path(name).expanduser()
    return target if target.is_absolute() else path.parent / target


def _check_redfish_tls(path: Path, host: str, entry: Mapping[str, Any]) -> None:
    """Refuse plain http:// unless allowed, a missing ca_bundle, and ca_bundle without verify."""
    where = f"host {host!r}"
    if (entry["address"].lower().startswith("http://")
            and not entry.get("allow_insecure_http", False)):
        raise _file_error(path, where, f"Redfish over plain http:// sends the BMC password in "
                                       f"clear; use https://, or set allow_insecure_http: true "
                                       f"for {host!r} to accept it")
    if "ca_bundle" not in entry:
        return
    bundle = _relative_to(path, entry["ca_bundle"])
    if not bundle.exists():
        raise _file_error(path, where, f"ca_bundle {str(bundle)!r} does not exist")
    if not entry.get("verify_tls", True):
        raise _file_error(path, where, "verify_tls: false conflicts with ca_bundle (a CA "
                                       "bundle is used to verify): drop one of them")


def refuse_if_readable(path: Path, what: str) -> None:
    """ConfigError unless only the owner may read the file: it holds BMC credentials."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError:
        return  # reading it reports why, in one line
    if mode & (stat.S_IRGRP | stat.S_IROTH):
        raise ConfigError(f"{what} is readable by group or others (mode {mode:04o}) and holds "
                          f"BMC credentials; refusing it: chmod 600 {path}")


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
    if "password" in entry:
        raise _file_error(path, f"host {host!r}", "give password or password_file, not both")
    raise _file_error(path, f"host {host!r}", "missing key 'password' (or 'password_file')")


def load_bmc_file(path: str | Path) -> dict[str, BmcConfig]:
    """Read a bmc.yaml: host name -> BmcConfig, `defaults:` merged under each host."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the BMC file: {exc.strerror}") from None
    refuse_if_readable(path, str(path))
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"line {mark.line + 1}" if mark is not None else "YAML"
        raise ConfigError(f"{path}: {at}: not valid YAML") from None
    if not isinstance(doc, Mapping) or not isinstance(doc.get("hosts"), Mapping):
        raise ConfigError(f"{path}: expected a mapping with a 'hosts' mapping")
    unknown = set(doc) - {"hosts", "defaults"}
    if unknown:
        raise ConfigError(f"{path}: unknown top-level key {sorted(unknown)[0]!r}")
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
        _check_entry(path, host, entry)
        bundle = entry.get("ca_bundle")
        configs[host] = BmcConfig(
            host=host, driver=entry["driver"], address=entry["address"],
            port=entry.get("port"), username=entry["username"],
            password=_password(path, host, entry),
            verify_tls=entry.get("verify_tls", True), system_id=entry.get("system_id"),
            timeout=float(entry.get("timeout", 30.0)),
            ca_bundle=str(_relative_to(path, bundle)) if bundle else None,
            allow_insecure_http=entry.get("allow_insecure_http", False),
            grace=float(entry.get("grace", 120.0)),
            read_attempts=entry.get("read_attempts", 3),
            read_backoff=float(entry.get("read_backoff", 0.5)))
    return configs


def _ipmi(config: BmcConfig) -> PowerDriver:
    from consolidator.power.ipmi import IpmiDriver

    return IpmiDriver(config)


def _redfish(config: BmcConfig) -> PowerDriver:
    from consolidator.power.redfish import RedfishDriver

    return RedfishDriver(config)


#: Every power driver by its bmc.yaml name; the object makes a driver from a BmcConfig
#: (the protocol library is imported only when a driver is made).
POWER_DRIVERS: Registry[Callable[[BmcConfig], PowerDriver]] = Registry("power driver")
POWER_DRIVERS.add("ipmi", "IPMI 2.0 over LAN (lanplus), chassis power", "pyghmi", _ipmi)
POWER_DRIVERS.add("redfish", "Redfish ComputerSystem.Reset and PowerState", "sushy", _redfish)


def driver_for(config: BmcConfig) -> PowerDriver:
    """The power driver for a host's BMC, chosen by config.driver."""
    if config.driver not in POWER_DRIVERS:
        raise config.error(f"unknown driver {config.driver!r} (expected one of "
                           f"{', '.join(POWER_DRIVERS.names())})")
    return POWER_DRIVERS.get(config.driver)(config)


def retry_reads(config: BmcConfig, read: Callable[[], T], *,
                retry_on: type[TransientPowerError] = TransientPowerError) -> T:
    """read(), tried config.read_attempts times while it fails transiently (backoff doubling).

    Only a retry_on error is retried: a refused password or a missing system fails at
    once. The last failure is re-raised as one PowerError line saying how often it was tried.
    """
    attempts = config.read_attempts
    retrying = tenacity.Retrying(
        retry=tenacity.retry_if_exception_type(retry_on),
        stop=tenacity.stop_after_attempt(attempts),
        wait=tenacity.wait_exponential(multiplier=config.read_backoff, min=0,
                                       max=MAX_READ_BACKOFF_S),
        before_sleep=lambda state: log.warning(
            "%s (attempt %d of %d; retrying)", state.outcome and state.outcome.exception(),
            state.attempt_number, attempts),
        reraise=True)
    try:
        return retrying(read)
    except retry_on as exc:
        if attempts == 1:
            raise
        raise type(exc)(f"{exc} (tried {attempts} times)") from None


def read_power(driver: PowerDriver) -> str:
    """The BMC's power state, or 'unknown' when it cannot be read (one line is logged)."""
    try:
        return driver.power_state()
    except ConsolidatorError as exc:
        log.info("%s", exc)
        return POWER_UNKNOWN


def wait_for_state(read: Callable[[], str], target: str, deadline: float,
                   interval: float) -> str:
    """Poll read() until it returns target or the monotonic deadline passes; the last state."""
    while True:
        state = read()
        if state == target or time.monotonic() >= deadline:
            return state
        time.sleep(max(0.0, min(interval, deadline - time.monotonic())))


def power_off_sequence(config: BmcConfig, read: Callable[[], str],
                       request: Callable[[str], None], *, graceful: bool, timeout: float,
                       grace: float | None, interval: float,
                       before_force: BeforeForce | None = None) -> str:
    """request('soft'), request('force') after `grace` s (None: config.grace); verified off.
    After a graceful request that did not power the host off, before_force (if given) is
    asked first: a reason raises ForceWithheld, and nothing is forced."""
    grace = config.grace if grace is None else grace
    deadline = time.monotonic() + timeout
    state = read()
    if state == POWER_OFF:
        return state
    if graceful:
        request("soft")
        state = wait_for_state(read, POWER_OFF, min(deadline, time.monotonic() + grace),
                               interval)
        if state == POWER_OFF:
            return state
        why = before_force() if before_force is not None else None
        if why is not None:
            raise ForceWithheld(f"{config.host}: not forced off after its graceful shutdown "
                                f"request: {why}")
        log.info("%s: no power-off %.0f s after a graceful shutdown; forcing it",
                 config.host, grace)
    request("force")
    state = wait_for_state(read, POWER_OFF, deadline, interval)
    if state != POWER_OFF:
        raise config.error(f"still {state!r} {timeout:.0f} s after power-off was requested")
    return state


def power_on_sequence(config: BmcConfig, read: Callable[[], str],
                      request: Callable[[], None], *, timeout: float,
                      interval: float) -> str:
    """Request power-on unless already on; verified on."""
    deadline = time.monotonic() + timeout
    state = read()
    if state == POWER_ON:
        return state
    request()
    state = wait_for_state(read, POWER_ON, deadline, interval)
    if state != POWER_ON:
        raise config.error(f"still {state!r} {timeout:.0f} s after power-on was requested")
    return state
