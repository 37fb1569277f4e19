"""Nova's fake virt driver, sized per host, with slow or failing live migrations on request.

Beyond Nova's VCPU, MEMORY_MB and DISK_GB, a host's extra classes become inventories as a
real driver reports them: VGPU on a nested child provider (as libvirt reports a physical
GPU), every other class (PCPU, CUSTOM_*) and the host's traits on the root provider. The
node is named after the hypervisor (the scenario host's name), which may differ from the
nova-compute service's host (its compute_host), as in clouds whose hypervisors report an
FQDN.
"""

from __future__ import annotations

import copy
import time
from typing import Any

import nova.virt.fake

from consolidator.core.model import Host
from consolidator.emulators.fake.faults import Faults


class Behaviour:
    """What every host's driver shares: how long a migration copies memory, and the faults."""

    def __init__(self, migration_seconds: float, faults: Faults,
                 resize_seconds: float = 0.0) -> None:
        self.migration_seconds = migration_seconds
        self.resize_seconds = resize_seconds
        self.faults = faults

    def update(self, changes: dict[str, Any]) -> dict[str, float]:
        """Change migration_seconds or resize_seconds (POST /_fake/driver); returns both."""
        for key in ("migration_seconds", "resize_seconds"):
            if key in changes:
                value = float(changes[key])
                if value < 0:
                    raise ValueError(f"{key} must not be negative")
                setattr(self, key, value)
        return {"migration_seconds": self.migration_seconds,
                "resize_seconds": self.resize_seconds}


class LiveMigrationFailed(Exception):
    """Raised by the fake driver when a migration_fails fault names the instance."""


#: Classes a real driver reports on a nested child provider of the compute node.
NESTED_CLASSES = ("VGPU",)


def child_name(nodename: str, rc: str) -> str:
    """The nested provider holding a class of a node (libvirt names its pGPUs alike)."""
    return f"{nodename}_{rc.lower()}_0"


class SizedDriver(nova.virt.fake.FakeLiveMigrateDriver):
    """A fake hypervisor with one host's size, reserved resources and allocation ratios."""

    host_model: Host
    behaviour: Behaviour

    def __init__(self, virtapi: Any, read_only: bool = False) -> None:
        super().__init__(virtapi, read_only)
        self._migrations: dict[str, str] = {}

    def init_host(self, host: str) -> None:
        """The node is the hypervisor's name, whatever the service's host is."""
        super().init_host(host)
        self._set_nodes([self.host_model.name])

    def update_provider_tree(self, provider_tree: Any, nodename: str,
                             allocations: Any = None) -> None:
        """Nova's inventory, with this host's reserved amounts and allocation ratios, its
        extra classes (VGPU on a nested child) and its traits."""
        super().update_provider_tree(provider_tree, nodename, allocations)
        host = self.host_model
        inventory = copy.deepcopy(provider_tree.data(nodename).inventory)
        for rc, reserved, ratio in (
                ("VCPU", host.reserved_vcpus, host.cpu_allocation_ratio),
                ("MEMORY_MB", host.reserved_memory_mb, host.ram_allocation_ratio),
                ("DISK_GB", host.reserved_disk_gb, host.disk_allocation_ratio)):
            inventory[rc]["reserved"] = reserved
            inventory[rc]["allocation_ratio"] = ratio
        for rc, inv in host.resources.items():
            if rc in NESTED_CLASSES:
                child = child_name(nodename, rc)
                if not provider_tree.exists(child):
                    provider_tree.new_child(child, nodename)
                provider_tree.update_inventory(child, {rc: _inventory(inv)})
            else:
                inventory[rc] = _inventory(inv)
        provider_tree.update_inventory(nodename, inventory)
        if host.traits:
            provider_tree.add_traits(nodename, *host.traits)

    def live_migration(self, context: Any, instance: Any, dest: str, post_method: Any,
                       recover_method: Any, block_migration: bool = False,
                       migrate_data: Any = None) -> None:
        """'Copy memory' for migration_seconds, then finish; fail or hang on a fault."""
        effect = self.behaviour.faults.migration_fault(instance.uuid, instance.display_name)
        if effect == "fails":
            raise LiveMigrationFailed(f"injected fault: live migration of {instance.uuid} "
                                      f"to {dest} failed")
        self._migrations[instance.uuid] = "running"
        deadline = None if effect == "hangs" else \
            time.monotonic() + self.behaviour.migration_seconds
        try:
            while self._migrations.get(instance.uuid) == "running" and (
                    deadline is None or time.monotonic() < deadline):
                time.sleep(0.05)
            outcome = self._migrations.get(instance.uuid)
        finally:
            self._migrations.pop(instance.uuid, None)
        if outcome == "abort":
            recover_method(context, instance, dest, migrate_data,
                           migration_status="cancelled")
        else:
            post_method(context, instance, dest, block_migration, migrate_data)

    def live_migration_abort(self, instance: Any) -> None:
        """Abort this instance's migration (not every migration of the host)."""
        if instance.uuid in self._migrations:
            self._migrations[instance.uuid] = "abort"

    def live_migration_force_complete(self, instance: Any) -> None:
        """Finish this instance's migration now."""
        if instance.uuid in self._migrations:
            self._migrations[instance.uuid] = "complete"

    def migrate_disk_and_power_off(self, *args: Any, **kwargs: Any) -> Any:
        """A resize or cold migration leaving this host: 'copy the disk' for resize_seconds."""
        time.sleep(self.behaviour.resize_seconds)
        return super().migrate_disk_and_power_off(*args, **kwargs)

    def get_host_uptime(self) -> str:
        """What os-hypervisors shows from 2.88 (the base driver raises NotImplementedError)."""
        return " 12:00:00 up 42 days,  3:14,  0 users,  load average: 0.10, 0.20, 0.30"


def _inventory(inv: Any) -> dict[str, Any]:
    """A model inventory as Placement's: integers, but the allocation ratio."""
    return {key: (float(value) if key == "allocation_ratio" else int(value))
            for key, value in inv.items()}


def driver_for(host: Host, behaviour: Behaviour) -> type[SizedDriver]:
    """A SizedDriver subclass for this host."""
    return type(f"SizedDriver_{host.name}", (SizedDriver,), {
        "vcpus": host.vcpus, "memory_mb": host.memory_mb, "local_gb": host.disk_gb,
        "host_model": host, "behaviour": behaviour})
