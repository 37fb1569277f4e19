"""Nova's API, conductor, scheduler, Placement and one nova-compute per host, in this process.

Built from the fixtures of Nova's own functional tests (nova.test.TestCase), set up by hand
outside any test runner: oslo.messaging's fake transport and in-memory SQLite databases.
"""

from __future__ import annotations

import os
import sys
from typing import Any
from unittest import mock

from nova import test
from nova.tests import fixtures as nova_fixtures
from nova.tests.functional import fixtures as func_fixtures
from nova.tests.functional import integrated_helpers

from consolidator.core.model import Host
from consolidator.emulators.realnova.driver import Behaviour, driver_for
from consolidator.emulators.realnova.logging_fixtures import QuietWarnings, file_logging
from consolidator.emulators.realnova.options import ServeOptions


class ControlPlane(test.TestCase, integrated_helpers.InstanceHelperMixin):
    """The real Nova control plane; call setUp() by hand, doCleanups() to stop it."""

    REQUIRES_LOCKING = True
    NUMBER_OF_CELLS = 1

    def __init__(self, options: ServeOptions, hosts: list[Host], behaviour: Behaviour) -> None:
        super().__init__()
        self.options = options
        self.host_models = {h.name: h for h in hosts}
        self.behaviour = behaviour
        self.computes: dict[str, Any] = {}
        self.drivers: dict[str, Any] = {}

    def runTest(self) -> None:  # noqa: N802 - testtools wants a test method
        """Never run: this TestCase is only its fixtures."""

    def setUp(self) -> None:  # noqa: N802 - testtools' name
        """Start the databases, the API, Placement, conductor, scheduler and the computes."""
        with mock.patch.object(nova_fixtures, "StandardLogging",
                               file_logging(self.options.log_file)), \
                mock.patch.object(nova_fixtures, "WarningsFixture", QuietWarnings):
            super().setUp()
        opts = self.options
        self.flags(api_paste_config=os.path.join(sys.prefix, "etc", "nova", "api-paste.ini"),
                   group="wsgi")
        self.flags(instances=-1, cores=-1, ram=-1, server_groups=-1,
                   server_group_members=-1, group="quota")
        # Nova sizes one process-wide live-migration pool by this option (default 1): in a
        # real cloud, one per nova-compute; here every compute shares this process.
        self.flags(max_concurrent_live_migrations=max(1, len(self.host_models)))
        # Every compute here reports its dedicated CPUs as PCPU: without this, Nova asks
        # Placement a second time with VCPU for a pinned instance and leaves PCPU to the
        # NUMATopologyFilter or the driver, neither of which checks it on the fake driver.
        self.flags(disable_fallback_pcpu_query=True, group="workarounds")
        self.flags(report_interval=opts.report_interval,
                   service_down_time=opts.service_down_time,
                   rpc_response_timeout=opts.rpc_timeout)
        self.useFixture(nova_fixtures.RealPolicyFixture())
        self.useFixture(nova_fixtures.NeutronFixture(self))
        self.glance = self.useFixture(nova_fixtures.GlanceFixture(self))
        self.useFixture(nova_fixtures.CinderFixture(self))
        self.placement_fixture = self.useFixture(func_fixtures.PlacementFixture())
        self.useFixture(nova_fixtures.NotificationFixture(self))
        self.api_fixture = self.useFixture(nova_fixtures.OSAPIFixture(api_version="v2.1"))
        self.api = self.admin_api = self.api_fixture.admin_api
        self.api.microversion = "latest"
        self.start_service("conductor")
        self.start_service("scheduler")
        for name in self.host_models:
            self._start_compute(name)

    def _start_compute(self, name: str) -> None:
        old = self.drivers.get(name)
        cls = driver_for(self.host_models[name], self.behaviour)

        def load(virtapi: Any, compute_driver: Any = None) -> Any:
            driver = cls(virtapi)
            if old is not None:
                driver.instances = old.instances  # the guests survive a power cycle
                driver.resources = old.resources  # and so do their claims
            self.drivers[name] = driver
            return driver

        service_host = self.host_models[name].compute_host
        cell = self.host_mappings[service_host].cell_mapping.name \
            if service_host in self.host_mappings else None
        with mock.patch("nova.virt.driver.load_compute_driver", side_effect=load):
            self.computes[name] = self.start_service("compute", host=service_host,
                                                     cell_name=cell)

    # -- power -----------------------------------------------------------------------

    def is_running(self, name: str) -> bool:
        """Whether this host's nova-compute runs (its host is powered on)."""
        return name in self.computes

    def stop_compute(self, name: str) -> None:
        """Power cut: stop the RPC server and the heartbeat; Nova notices after
        service_down_time, as with a real host."""
        compute = self.computes.pop(name, None)
        if compute is not None:
            compute.stop()

    def start_compute(self, name: str) -> None:
        """Power on: a new nova-compute for the host, with the same guests."""
        if name not in self.computes:
            self._start_compute(name)

    # -- the apps to serve -------------------------------------------------------------

    def nova_app(self) -> Any:
        """The osapi_compute WSGI app."""
        return self.api_fixture.app()

    def placement_app(self) -> Any:
        """The Placement WSGI app."""
        from placement import deploy

        return deploy.loadapp(self.placement_fixture.conf_fixture.conf)

    @property
    def project_id(self) -> str:
        """The project every API caller is in (Nova's stubbed keystone context)."""
        return str(nova_fixtures.PROJECT_ID)
