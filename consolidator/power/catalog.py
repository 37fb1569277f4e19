"""Every power protocol, listed once (the only module that imports them all): a new protocol
is a driver module with its own keys and validate(), plus one line here."""

from __future__ import annotations

from consolidator.core.registry import Registry
from consolidator.power.driver import BmcConfig, KeyTypes, PowerDriver, PowerProtocol
from consolidator.power.ipmi import IpmiDriver
from consolidator.power.redfish import RedfishDriver

#: Every power protocol by its bmc.yaml name (driver:); the object makes a driver from a
#: BmcConfig (the protocol library is imported only when a driver talks to its BMC).
POWER_DRIVERS: Registry[PowerProtocol] = Registry("power driver")
POWER_DRIVERS.add("ipmi", "IPMI 2.0 over LAN (lanplus), chassis power", "pyghmi", IpmiDriver)
POWER_DRIVERS.add("redfish", "Redfish ComputerSystem.Reset and PowerState", "sushy",
                  RedfishDriver)


def protocol_keys() -> dict[str, KeyTypes]:
    """The bmc.yaml keys of every protocol, protocols in name order."""
    keys: dict[str, KeyTypes] = {}
    for name in POWER_DRIVERS.names():
        keys.update(POWER_DRIVERS.get(name).PROPERTIES)
    return keys


def driver_for(config: BmcConfig) -> PowerDriver:
    """The power driver for a host's BMC, chosen by config.driver."""
    if config.driver not in POWER_DRIVERS:
        raise config.error(f"unknown driver {config.driver!r} (expected one of "
                           f"{', '.join(POWER_DRIVERS.names())})")
    return POWER_DRIVERS.get(config.driver)(config)
