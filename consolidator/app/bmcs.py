"""The BMCs a bmc.yaml lists, and where each listens."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from consolidator.power.bmc_file import load_bmc_file


def bmc_address(config: Any) -> str:
    """Where a BMC (its BmcConfig) listens: 'address:port/udp' for IPMI, else its Redfish
    address and system."""
    return (f"{config.address}:{config.port}/udp" if config.driver == "ipmi"
            else f"{config.address}{config.options.get('system_id') or ''}")


def listed_bmcs(path: str | Path) -> list[tuple[str, str, str]]:
    """Every BMC of a bmc.yaml: its host, its driver and where it listens."""
    return [(host, config.driver, bmc_address(config))
            for host, config in load_bmc_file(path).items()]
