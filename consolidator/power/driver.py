"""What a power driver is: the protocol, how to reach a BMC (BmcConfig), the errors, and
the helpers every driver shares (retried reads, verified power-on and power-off)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import tenacity

from consolidator.core.errors import ConfigError, ConsolidatorError

log = logging.getLogger(__name__)

T = TypeVar("T")
POWER_ON, POWER_OFF, POWER_UNKNOWN = "on", "off", "unknown"
#: The YAML types a bmc.yaml key accepts (a bool is never taken for an int).
KeyTypes = type | tuple[type, ...]
#: The longest wait between two attempts of a BMC read, whatever read_backoff says.
MAX_READ_BACKOFF_S = 10.0


class PowerError(ConsolidatorError):
    """A BMC call failed: "<host>: <driver> BMC <address>: <cause>" (never the password)."""


class TransientPowerError(PowerError):
    """A BMC call failed in a way worth retrying: no answer, a timeout, HTTP 5xx, node busy."""


class InvalidBmcEntry(ConfigError):
    """A protocol refused its keys in one host's bmc.yaml entry (the loader names the file
    and the host)."""


class ForceWithheld(ConsolidatorError):
    """The forced power-off after a graceful request was not sent: the re-check before it
    found a reason (the message)."""


#: Asked after the graceful request, right before forcing: why not to force, or None.
BeforeForce = Callable[[], "str | None"]
#: Called immediately before each power request is sent to the BMC (after the identity
#: read): the fence; it raises to send nothing.
BeforeRequest = Callable[[], None]


@dataclass(frozen=True)
class BmcConfig:
    """How to reach one host's BMC."""

    host: str
    driver: str
    address: str
    port: int | None
    username: str
    password: str = field(repr=False)
    timeout: float = 30.0
    #: Seconds between a graceful shutdown and the forced power-off, unless a caller says.
    grace: float = 120.0
    #: Tries of a power-state read before a transient failure counts (1: no retry).
    read_attempts: int = 3
    #: Seconds before the second try of a read; doubled before each later one.
    read_backoff: float = 0.5
    #: The protocol's own keys, as its validate() returned them (each driver reads its own).
    options: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def error(self, cause: str, *, transient: bool = False) -> PowerError:
        """A PowerError naming this host, driver and address (TransientPowerError if so)."""
        kind = TransientPowerError if transient else PowerError
        return kind(f"{self.host}: {self.driver} BMC {self.address}: {cause}")


class PowerReader(Protocol):
    """What a power driver reads without changing anything: its power and its system."""

    host: str

    def power_state(self) -> str:
        """'on', 'off' or 'unknown'."""
        ...

    def identity(self) -> dict[str, str]:
        """What the BMC reports of the system its entry reaches, read now: e.g. {"uuid",
        "serial", "hostname"} (Redfish) or {"guid"} (IPMI); only the keys it reports."""
        ...

    def expected_identity(self) -> dict[str, str]:
        """What the host's bmc.yaml entry says its system is (same keys; empty: unsaid), so
        that a mis-wired entry is caught before it powers off another host."""
        ...


class PowerDriver(PowerReader, Protocol):
    """What every power driver offers; end states are verified against the BMC."""

    def power_on(self, *, timeout: float = 300.0,
                 before_request: BeforeRequest | None = None) -> str:
        """Power on and wait until the BMC reports 'on'; returns it. before_request is
        called right before the request is sent."""
        ...

    def power_off(self, *, graceful: bool = True, timeout: float = 300.0,
                  grace: float | None = None, before_force: BeforeForce | None = None,
                  before_request: BeforeRequest | None = None) -> str:
        """Shut down gracefully, force after `grace` s (None: config.grace); wait for 'off'.
        If before_force gives a reason when the grace is over, raise ForceWithheld instead
        of forcing. before_request is called right before each request is sent."""
        ...


class PowerProtocol(Protocol):
    """A power protocol as power/catalog.py lists it (a driver class is one): its own
    bmc.yaml keys, their check, and the driver it makes from a BmcConfig."""

    @property
    def PROPERTIES(self) -> Mapping[str, KeyTypes]:
        """Its own bmc.yaml keys and the types each accepts (the loader checks the types)."""
        ...

    def validate(self, host: str, entry: Mapping[str, Any],
                 resolve: Callable[[str], Path]) -> dict[str, Any]:
        """Its keys of one host's merged entry, checked (InvalidBmcEntry) and normalised
        (resolve makes a path named in the file absolute): BmcConfig.options."""
        ...

    def __call__(self, config: BmcConfig) -> PowerDriver:
        """The driver of one host's BMC (the protocol library is imported only now)."""
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
        before_sleep=lambda state: log.info(   # -v: the last failure is the error
            "%s (attempt %d of %d; retrying)", state.outcome and state.outcome.exception(),
            state.attempt_number, attempts),
        reraise=True)
    try:
        return retrying(read)
    except retry_on as exc:
        if attempts == 1:
            raise
        raise type(exc)(f"{exc} (tried {attempts} times)") from None


def identity_mismatch(expected: Mapping[str, str], reported: Mapping[str, str]) -> str | None:
    """Why a BMC's reported identity is not the one bmc.yaml expects (each key bmc.yaml gives
    must be reported, equal up to case), or None."""
    for key, want in expected.items():
        got = reported.get(key)
        if got is None:
            return f"bmc.yaml expects its system {key} {want!r}, but the BMC reports none"
        if got.strip().lower() != want.strip().lower():
            return (f"bmc.yaml expects its system {key} {want!r}, but the BMC reports "
                    f"{got!r}: the entry reaches another system")
    return None


def check_identity(config: BmcConfig, driver: PowerDriver) -> None:
    """Raise PowerError unless the BMC's system is the one bmc.yaml expects (nothing to
    check when the entry gives no identity)."""
    expected = driver.expected_identity()
    if not expected:
        return
    why = identity_mismatch(expected, driver.identity())
    if why is not None:
        raise config.error(why)


def read_power(driver: PowerReader) -> str:
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
                       before_force: BeforeForce | None = None,
                       verify: Callable[[], None] | None = None,
                       before_request: BeforeRequest | None = None) -> str:
    """request('soft'), request('force') after `grace` s (None: config.grace); verified off.
    verify (the identity check) runs before anything is sent. After a graceful request that
    did not power the host off, before_force (if given) is asked first: a reason raises
    ForceWithheld, and nothing is forced. before_request (the fence) is called right before
    each request is sent, after verify."""
    if verify is not None:
        verify()
    fence = before_request or (lambda: None)
    grace = config.grace if grace is None else grace
    deadline = time.monotonic() + timeout
    state = read()
    if state == POWER_OFF:
        return state
    if graceful:
        fence()
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
    fence()
    request("force")
    state = wait_for_state(read, POWER_OFF, deadline, interval)
    if state != POWER_OFF:
        raise config.error(f"still {state!r} {timeout:.0f} s after power-off was requested")
    return state


def power_on_sequence(config: BmcConfig, read: Callable[[], str],
                      request: Callable[[], None], *, timeout: float,
                      interval: float, verify: Callable[[], None] | None = None,
                      before_request: BeforeRequest | None = None) -> str:
    """Request power-on unless already on; verified on. verify (the identity check) runs
    before anything is sent, before_request (the fence) right before the request."""
    if verify is not None:
        verify()
    deadline = time.monotonic() + timeout
    state = read()
    if state == POWER_ON:
        return state
    if before_request is not None:
        before_request()
    request()
    state = wait_for_state(read, POWER_ON, deadline, interval)
    if state != POWER_ON:
        raise config.error(f"still {state!r} {timeout:.0f} s after power-on was requested")
    return state
