"""What `fake-cloud serve --backend nova` was asked for; importing this needs no Nova."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class ServeOptions:
    """The real-Nova server's options, passed to its process as one JSON argument."""

    scenario: str | None = None
    hosts: int = 0
    port: int = 0
    host_vcpus: int = 16
    host_memory_mb: int = 65536
    host_disk_gb: int = 1000
    clouds_yaml: str | None = None
    cloud_name: str = "fake"
    bmc: bool = False
    bmc_yaml: str | None = None
    log_file: str | None = None
    migration_seconds: float = 1.0
    report_interval: int = 2
    service_down_time: int = 10
    rpc_timeout: int = 10
    boot_concurrency: int = 10

    def to_json(self) -> str:
        """This, as the JSON argument of `python -m consolidator.emulators.realnova`."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ServeOptions:
        """Parse the JSON argument."""
        return cls(**json.loads(text))

    def argv(self) -> list[str]:
        """The command line that runs the real-Nova server with these options."""
        return [sys.executable, "-m", "consolidator.emulators.realnova", self.to_json()]
