"""IPMI power driver over pyghmi: calls serialised per BMC, each under a watchdog; power reads
retried on transient failures."""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from consolidator.power import pyghmi_io
from consolidator.power.driver import (
    POWER_OFF,
    POWER_ON,
    POWER_UNKNOWN,
    BeforeForce,
    BeforeRequest,
    BmcConfig,
    InvalidBmcEntry,
    KeyTypes,
    PowerError,
    TransientPowerError,
    check_identity,
    power_off_sequence,
    power_on_sequence,
    retry_reads,
)

T = TypeVar("T")
DEFAULT_PORT = 623
#: pyghmi's own give-up time for a silent BMC is about 5 s; the watchdog allows more.
MIN_WATCHDOG_S = 10.0
_AUTH_MARKERS = ("password", "unauthorized", "invalid role", "rakp", "integrity code")
_SILENT_MARKERS = ("timeout", "no longer connected", "timed out")
#: Completion codes a BMC sends when it cannot answer now (IPMI 2.0 table 5-2): node busy,
#: timeout while processing, response could not be provided (pyghmi gives their text).
_BUSY_MARKERS = ("node busy", "timeout while processing", "could not be provided")


class LoginFailed(TransientPowerError):
    """The RMCP+ session login got no answer (or a busy one): no command reached the BMC,
    so even a power action may be tried again."""


class _NotLoggedIn(Exception):
    """Raised in the worker: Command() (the session login) failed; wraps pyghmi's error."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


_locks: dict[tuple[str, int], threading.Lock] = {}
_locks_guard = threading.Lock()


def _bmc_lock(address: str, port: int) -> threading.Lock:
    """The one lock of a BMC, shared by every driver object in this process."""
    with _locks_guard:
        return _locks.setdefault((address, port), threading.Lock())


def _transient(exc: BaseException) -> bool:
    """Worth retrying: a silent BMC, a timeout or a busy BMC (not a refused login)."""
    text = str(exc).lower()
    if text in ("", "none"):
        return True
    if any(marker in text for marker in _AUTH_MARKERS):
        return False
    return any(marker in text for marker in _SILENT_MARKERS + _BUSY_MARKERS)


def _cause(exc: BaseException) -> str:
    """A short cause for a pyghmi exception, in our words where we know it."""
    text = str(exc)
    if text in ("", "None"):  # pyghmi's login gives up on a silent BMC with no message
        return "does not answer (no reply to the session login)"
    lower = text.lower()
    if any(marker in lower for marker in _AUTH_MARKERS):
        return f"authentication refused ({text})"
    if any(marker in lower for marker in _SILENT_MARKERS):
        return f"does not answer ({text})"
    return text.splitlines()[0]


#: DCMI: the group extension netfn, Get Power Reading, its group id, "system power statistics".
DCMI_NETFN, DCMI_GET_POWER_READING, DCMI_GROUP, DCMI_SYSTEM_POWER = 0x2C, 0x02, 0xDC, 0x01
#: The reading-state bit "power measurement active" (DCMI 1.5, table 6-16, byte 18).
DCMI_ACTIVE = 0x40
#: Completion codes meaning "not offered": invalid command, invalid for this LUN.
_NOT_OFFERED = (0xC1, 0xC2)


def _dcmi_watts(cmd: Any) -> float | None:
    """Send Get Power Reading on an open session; the current watts or None."""
    from pyghmi.exceptions import IpmiException

    try:
        rsp = cmd.xraw_command(netfn=DCMI_NETFN, command=DCMI_GET_POWER_READING,
                               data=(DCMI_GROUP, DCMI_SYSTEM_POWER, 0, 0))
    except IpmiException as exc:
        if getattr(exc, "ipmicode", None) in _NOT_OFFERED:
            return None
        raise
    data = bytes(rsp["data"])
    if len(data) < 3 or data[0] != DCMI_GROUP:
        return None
    if len(data) >= 18 and not data[17] & DCMI_ACTIVE:
        return None
    return float(int.from_bytes(data[1:3], "little"))


#: Get System GUID (IPMI 2.0, 22.14): netfn App, command 0x37; 16 bytes, the first fields
#: little-endian (as SMBIOS stores the UUID).
GET_SYSTEM_GUID = 0x37


def _system_guid(cmd: Any) -> dict[str, str]:
    """Send Get System GUID on an open session: {"guid": ...}, or {} if not offered."""
    from pyghmi.exceptions import IpmiException

    try:
        rsp = cmd.xraw_command(netfn=6, command=GET_SYSTEM_GUID)
    except IpmiException as exc:
        if getattr(exc, "ipmicode", None) in _NOT_OFFERED:
            return {}
        raise
    data = bytes(rsp["data"])
    return {"guid": str(uuid.UUID(bytes_le=data[:16]))} if len(data) >= 16 else {}


class IpmiDriver:
    """Power a host through its BMC over IPMI 2.0 (RMCP+) with pyghmi."""

    #: IPMI's own bmc.yaml key: the system GUID (Get System GUID), checked before every
    #: power action where given (port defaults to 623).
    PROPERTIES: ClassVar[Mapping[str, KeyTypes]] = {"system_guid": str}

    @staticmethod
    def validate(host: str, entry: Mapping[str, Any],
                 resolve: Callable[[str], Path]) -> dict[str, Any]:
        """The system GUID, if given, must be a UUID (InvalidBmcEntry)."""
        if "system_guid" not in entry:
            return {}
        try:
            return {"system_guid": str(uuid.UUID(entry["system_guid"]))}
        except ValueError:
            raise InvalidBmcEntry(f"system_guid {entry['system_guid']!r} is not a GUID "
                                  f"(e.g. 'consolidator bmc-check' shows it)") from None

    def __init__(self, config: BmcConfig, *, poll_interval: float = 1.0) -> None:
        self.config = config
        self.host = config.host
        self.port = config.port or DEFAULT_PORT
        self.poll_interval = poll_interval
        self._lock = _bmc_lock(config.address, self.port)
        pyghmi_io.install()  # pyghmi's I/O thread must not block in a read (see there)

    def _watchdog(self, what: str, call: Callable[[], T]) -> T:
        """Run call() in a worker holding the BMC lock; PowerError if it takes too long."""
        limit = max(self.config.timeout, MIN_WATCHDOG_S)
        box: dict[str, Any] = {}

        def work() -> None:
            if not self._lock.acquire(timeout=limit):
                box["error"] = self.config.error(f"{what}: busy for {limit:.0f} s "
                                                 f"with an earlier call")
                return
            try:
                box["value"] = call()
            except Exception as exc:  # noqa: BLE001 - translated below, at the edge
                box["error"] = exc
            finally:
                self._lock.release()

        worker = threading.Thread(target=work, name=f"ipmi-{self.host}", daemon=True)
        worker.start()
        worker.join(limit)
        if worker.is_alive():
            raise self.config.error(f"{what}: does not answer (no reply within {limit:.0f} s)")
        error = box.get("error")
        if isinstance(error, PowerError):
            raise error
        if error is not None:
            failure = self.config.error(f"{what}: {_cause(error)}",
                                        transient=_transient(error))
            if isinstance(error, _NotLoggedIn) and isinstance(failure, TransientPowerError):
                raise LoginFailed(str(failure)) from None
            raise failure from None
        return box["value"]

    def _session(self, use: Callable[[Any], T]) -> T:
        """use(Command) in a fresh RMCP+ session, logged out after: every call re-authenticates.

        userid and password go as bytes (with str, a second Command() hangs).
        """
        from pyghmi.ipmi import command

        try:
            cmd = command.Command(bmc=self.config.address,
                                  userid=self.config.username.encode(),
                                  password=self.config.password.encode(), port=self.port,
                                  keepalive=False)
        except Exception as exc:  # noqa: BLE001 - pyghmi raises several kinds; kept inside
            raise _NotLoggedIn(exc) from exc
        try:
            return use(cmd)
        finally:
            with contextlib.suppress(Exception):
                cmd.ipmi_session.logout()

    def power_state(self) -> str:
        """'on', 'off' or 'unknown', as the BMC reports it; retried if transient."""
        def call() -> str:
            state = self._session(lambda cmd: cmd.get_power().get("powerstate"))
            return state if state in (POWER_ON, POWER_OFF) else POWER_UNKNOWN

        return retry_reads(self.config, lambda: self._watchdog("power status", call))

    def identity(self) -> dict[str, str]:
        """The system GUID the BMC reports (Get System GUID), read now; empty when it does
        not offer the command; retried if transient."""
        def call() -> dict[str, str]:
            return self._session(_system_guid)

        return retry_reads(self.config, lambda: self._watchdog("system GUID", call))

    def expected_identity(self) -> dict[str, str]:
        """The bmc.yaml entry's system_guid, if any."""
        guid = self.config.options.get("system_guid")
        return {"guid": guid} if guid else {}

    def power_watts(self) -> float | None:
        """The DCMI power reading (Get Power Reading, system power statistics), one try;
        None when the BMC does not offer DCMI or says the measurement is not active."""
        def call() -> float | None:
            return self._session(_dcmi_watts)

        return self._watchdog("power reading", call)

    def _request(self, state: str) -> None:
        """Send one chassis control request (no waiting here). Tried again, within
        read_attempts, only while the session login goes unanswered: the request itself
        is never sent twice."""
        retry_reads(self.config, lambda: self._watchdog(f"power {state}", lambda: self._session(
            lambda cmd: cmd.set_power(state, wait=False))), retry_on=LoginFailed)

    def power_on(self, *, timeout: float = 300.0,
                 before_request: BeforeRequest | None = None) -> str:
        """Power on; returns 'on' once the BMC reports it."""
        return power_on_sequence(self.config, self.power_state,
                                 lambda: self._request("on"), timeout=timeout,
                                 interval=self.poll_interval,
                                 verify=lambda: check_identity(self.config, self),
                                 before_request=before_request)

    def power_off(self, *, graceful: bool = True, timeout: float = 300.0,
                  grace: float | None = None, before_force: BeforeForce | None = None,
                  before_request: BeforeRequest | None = None) -> str:
        """Soft-off (ACPI), a hard off after `grace` s (None: config.grace); returns 'off'."""
        return power_off_sequence(
            self.config, self.power_state,
            lambda kind: self._request("softoff" if kind == "soft" else "off"),
            graceful=graceful, timeout=timeout, grace=grace, interval=self.poll_interval,
            before_force=before_force, verify=lambda: check_identity(self.config, self),
            before_request=before_request)
