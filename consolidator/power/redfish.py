"""Redfish power driver over sushy: basic auth, TLS verified (optionally against a CA bundle),
plain http:// only where bmc.yaml allows it, power reads retried on transient failures."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, TypeVar
from urllib.parse import urlsplit

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
    check_identity,
    power_off_sequence,
    power_on_sequence,
    retry_reads,
)

T = TypeVar("T")
#: sushy retries a failed request 10 times at 3 s by default; here it sends a request once
#: (and a GET answered 5xx twice): power reads are retried above it (BmcConfig.read_attempts).
RETRIES = 1
RETRY_DELAY_S = 0.5
CONNECT_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class RedfishOptions:
    """Redfish's own keys of one host's bmc.yaml entry (BmcConfig.options), with defaults."""

    verify_tls: bool = True
    #: A CA bundle (file or directory) to verify the BMC's certificate with.
    ca_bundle: str | None = None
    #: Accept a plain http:// address (credentials then cross the wire in clear).
    allow_insecure_http: bool = False
    #: The ComputerSystem's path; None: the service's only one.
    system_id: str | None = None
    #: The system's identity, checked before every power action where given: its UUID,
    #: SerialNumber and HostName as the ComputerSystem reports them.
    system_uuid: str | None = None
    system_serial: str | None = None
    system_hostname: str | None = None

    @classmethod
    def of(cls, config: BmcConfig) -> RedfishOptions:
        """The options a BmcConfig carries."""
        return cls(**config.options)

    @property
    def tls_verify(self) -> bool | str:
        """What TLS verification uses: the CA bundle's path, else verify_tls."""
        return self.ca_bundle if self.ca_bundle and self.verify_tls else self.verify_tls


def base_url(config: BmcConfig) -> str:
    """scheme://host[:port] of the BMC (https unless the address names a scheme).

    Plain http:// is refused (PowerError) unless the options allow_insecure_http.
    """
    address = config.address if "://" in config.address else f"https://{config.address}"
    parts = urlsplit(address)
    if parts.scheme.lower() == "http" and not RedfishOptions.of(config).allow_insecure_http:
        raise config.error("plain http:// is refused (it sends the password in clear); use "
                           "https://, or set allow_insecure_http: true for this host")
    netloc = parts.netloc
    if config.port and parts.port is None:
        netloc = f"{netloc}:{config.port}"
    return f"{parts.scheme}://{netloc}"


def _tls_failure(exc: BaseException) -> bool:
    text = str(getattr(exc, "kwargs", {}).get("error") or exc)
    return "CERTIFICATE_VERIFY_FAILED" in text or "SSLError" in text


def _transient(exc: BaseException) -> bool:
    """Worth retrying: no connection or no answer in time (not TLS), or HTTP 5xx."""
    from sushy import exceptions as sx

    if isinstance(exc, sx.ConnectionError):
        return not _tls_failure(exc)
    return isinstance(exc, (sx.ServerSideError, ConnectionError, TimeoutError))


def _cause(exc: BaseException) -> str:
    """A short cause for a sushy exception, in our words where we know it."""
    from sushy import exceptions as sx

    status = getattr(exc, "status_code", None)
    if isinstance(exc, sx.AccessError) and status == 401:
        return "authentication refused (HTTP 401)"
    if isinstance(exc, sx.AccessError):
        return f"access denied (HTTP {status})"
    if isinstance(exc, sx.ConnectionError):
        if _tls_failure(exc):
            return ("TLS certificate not trusted (give its CA as ca_bundle, or set "
                    "verify_tls: false for a self-signed BMC)")
        text = str(getattr(exc, "kwargs", {}).get("error") or exc)
        return f"does not answer ({text.splitlines()[0][:200]})"
    if isinstance(exc, sx.ResourceNotFoundError):
        return f"not found: {getattr(exc, 'url', '')}"
    if isinstance(exc, sx.HTTPError):
        return f"HTTP {status}: {getattr(exc, 'detail', None) or exc}".splitlines()[0]
    if isinstance(exc, sx.UnknownDefaultError):
        return "the service has not exactly one system; set system_id"
    return (str(exc) or type(exc).__name__).splitlines()[0]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else None


def _chassis_watts(conn: Any, chassis: dict[str, Any]) -> float | None:
    """PowerConsumedWatts of the chassis' first PowerControl, else EnvironmentMetrics."""
    power = (chassis.get("Power") or {}).get("@odata.id")
    if power:
        for control in conn.get(path=power).json().get("PowerControl") or []:
            watts = _number(control.get("PowerConsumedWatts"))
            if watts is not None:
                return watts
    metrics = (chassis.get("EnvironmentMetrics") or {}).get("@odata.id")
    if metrics:
        reading = conn.get(path=metrics).json().get("PowerWatts") or {}
        return _number(reading.get("Reading"))
    return None


class RedfishDriver:
    """Power a host's ComputerSystem through Redfish Reset actions."""

    #: Redfish's own bmc.yaml keys and the types each accepts.
    PROPERTIES: ClassVar[Mapping[str, KeyTypes]] = {
        "verify_tls": bool, "ca_bundle": str, "allow_insecure_http": bool, "system_id": str,
        "system_uuid": str, "system_serial": str, "system_hostname": str}
    #: The identity keys of bmc.yaml (system_*) and the ComputerSystem field each checks.
    IDENTITY = {"uuid": "system_uuid", "serial": "system_serial", "hostname": "system_hostname"}

    @staticmethod
    def validate(host: str, entry: Mapping[str, Any],
                 resolve: Callable[[str], Path]) -> dict[str, Any]:
        """Redfish's keys of a host's entry: plain http:// refused unless allowed, ca_bundle
        resolved and present and not beside verify_tls: false (InvalidBmcEntry)."""
        address = entry["address"]
        scheme = address.split("://", 1)[0].lower() if "://" in address else "https"
        if scheme not in ("https", "http"):
            raise InvalidBmcEntry(f"address {address!r}: Redfish speaks https:// (or http:// "
                                  f"with allow_insecure_http), not {scheme}://")
        if scheme == "http" and not entry.get("allow_insecure_http", False):
            raise InvalidBmcEntry(f"Redfish over plain http:// sends the BMC password in "
                                  f"clear; use https://, or set allow_insecure_http: true "
                                  f"for {host!r} to accept it")
        options = {key: entry[key] for key in RedfishDriver.PROPERTIES if key in entry}
        if "ca_bundle" in entry:
            bundle = resolve(entry["ca_bundle"])
            if not bundle.exists():
                raise InvalidBmcEntry(f"ca_bundle {str(bundle)!r} does not exist")
            if not entry.get("verify_tls", True):
                raise InvalidBmcEntry("verify_tls: false conflicts with ca_bundle (a CA "
                                      "bundle is used to verify): drop one of them")
            options["ca_bundle"] = str(bundle) if entry["ca_bundle"] else None
        return options

    def __init__(self, config: BmcConfig, *, poll_interval: float = 1.0) -> None:
        self.config = config
        self.options = RedfishOptions.of(config)
        self.host = config.host
        self.poll_interval = poll_interval
        self._lock = threading.Lock()
        self._root: Any = None
        self._system_path: str | None = self.options.system_id

    def _call(self, what: str, call: Callable[[], T]) -> T:
        """Run call() under this driver's lock, translating sushy errors to PowerError."""
        from sushy import exceptions as sx

        with self._lock, warnings.catch_warnings():
            if not self.options.verify_tls:
                warnings.filterwarnings("ignore", message="Unverified HTTPS request")
            try:
                return call()
            except PowerError:
                raise
            except (sx.SushyError, OSError, ValueError) as exc:
                self._root = None
                raise self.config.error(f"{what}: {_cause(exc)}",
                                        transient=_transient(exc)) from None

    def _system(self) -> Any:
        """The ComputerSystem, fetched fresh (the root is connected once)."""
        import sushy
        from sushy import auth

        if self._root is None:
            self._root = sushy.Sushy(
                base_url(self.config),
                auth=auth.BasicAuth(self.config.username, self.config.password),
                verify=self.options.tls_verify, server_side_retries=RETRIES,
                server_side_retries_delay=RETRY_DELAY_S, read_timeout=self.config.timeout,
                connect_timeout=min(CONNECT_TIMEOUT_S, self.config.timeout))
        system = self._root.get_system(self._system_path)
        self._system_path = system.path
        return system

    def _read(self) -> str:
        from sushy import PowerState

        state = self._system().power_state
        if state == PowerState.ON:
            return POWER_ON
        if state == PowerState.OFF:
            return POWER_OFF
        return POWER_UNKNOWN

    def power_state(self) -> str:
        """'on', 'off' or 'unknown' (also while powering on or off); retried if transient."""
        return retry_reads(self.config, lambda: self._call("power status", self._read))

    def identity(self) -> dict[str, str]:
        """The ComputerSystem's UUID, SerialNumber and HostName (those it reports); read
        fresh, retried if transient."""
        def read() -> dict[str, str]:
            system = self._system()
            found = {"uuid": system.uuid, "serial": system.serial_number,
                     "hostname": system.hostname}
            return {key: str(value) for key, value in found.items() if value}

        return retry_reads(self.config, lambda: self._call("identity", read))

    def expected_identity(self) -> dict[str, str]:
        """The system_uuid, system_serial and system_hostname of the bmc.yaml entry."""
        return {key: str(getattr(self.options, option))
                for key, option in self.IDENTITY.items() if getattr(self.options, option)}

    def power_watts(self) -> float | None:
        """The chassis' draw: Power's PowerControl PowerConsumedWatts, else the newer
        EnvironmentMetrics' PowerWatts reading; one try; None when the BMC has neither."""
        return self._call("power reading", self._watts)

    def _watts(self) -> float | None:
        system = self._system()
        conn = system._conn  # sushy's connector: these resources are read as plain JSON
        for link in (system.json.get("Links") or {}).get("Chassis") or []:
            chassis = conn.get(path=link["@odata.id"]).json()
            watts = _chassis_watts(conn, chassis)
            if watts is not None:
                return watts
        return None

    def _reset(self, reset_type: str, fallback: str | None = None) -> None:
        """POST one ComputerSystem.Reset action (fallback if the BMC does not offer it)."""
        from sushy import ResetType

        def call() -> None:
            system = self._system()
            wanted = ResetType(reset_type)
            allowed = system.get_allowed_reset_system_values()
            if wanted not in allowed and fallback is not None:
                wanted = ResetType(fallback)
            if wanted not in allowed:
                raise self.config.error(f"reset {reset_type}: not offered by the BMC "
                                        f"(offers {', '.join(sorted(v.value for v in allowed))})")
            system.reset_system(wanted)

        self._call(f"reset {reset_type}", call)

    def power_on(self, *, timeout: float = 300.0,
                 before_request: BeforeRequest | None = None) -> str:
        """Reset On; returns 'on' once PowerState says so."""
        return power_on_sequence(self.config, self.power_state, lambda: self._reset("On"),
                                 timeout=timeout, interval=self.poll_interval,
                                 verify=lambda: check_identity(self.config, self),
                                 before_request=before_request)

    def power_off(self, *, graceful: bool = True, timeout: float = 300.0,
                  grace: float | None = None, before_force: BeforeForce | None = None,
                  before_request: BeforeRequest | None = None) -> str:
        """GracefulShutdown, ForceOff after `grace` s (None: config.grace); returns 'off'."""
        return power_off_sequence(
            self.config, self.power_state,
            lambda kind: self._reset("GracefulShutdown", "ForceOff") if kind == "soft"
            else self._reset("ForceOff"),
            graceful=graceful, timeout=timeout, grace=grace, interval=self.poll_interval,
            before_force=before_force, verify=lambda: check_identity(self.config, self),
            before_request=before_request)
