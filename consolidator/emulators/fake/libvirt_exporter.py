"""Per-instance CPU counters as a libvirt exporter serves them, one exporter per compute host.

``GET /libvirt/{host}/metrics`` answers Prometheus's text format with the metrics of the
libvirt exporters (kumina's and inovex's ``prometheus-libvirt-exporter``) for the servers on
that host: ``libvirt_domain_info_cpu_time_seconds_total{domain}`` (a counter),
``libvirt_domain_info_virtual_cpus{domain}``, ``libvirt_domain_info_maximum_memory_bytes``
and ``libvirt_domain_openstack_info{domain, instance_id, instance_name, project_id,
flavor_name, ...} 1``. A real Prometheus scrapes it
(one target per host, ``__metrics_path__`` set per target), and the recording rules of
``consolidator/deploy/prometheus/`` turn the counters into the usage the telemetry reads.

Each server's counter grows at its scenario usage ``cpu_mean`` (vCPUs), plus a Gaussian
wobble of ``cpu_std`` per scrape (seeded by the server id, so runs repeat), and never falls.
``POST /_fake/usage/{server}`` with ``{"cpu_mean": x, "cpu_std": y}`` changes it from now
on. A powered-off host's exporter answers 503 (its scrapes fail, its series go stale), and
so does any host named in ``POST /_fake/exporter-down/{host}`` until ``DELETE`` of it.
"""

from __future__ import annotations

import random
import time
from dataclasses import replace
from typing import Any

from consolidator.emulators.fake.server import HTTPError, Request, Response, Router, Service
from consolidator.emulators.fake.state import CloudState, ServerRecord


def _error_body(status: int, message: str) -> Any:
    return message.encode() + b"\n"


class LibvirtExporters:
    """Serves /libvirt/{host}/metrics from the servers' usage, and the usage control."""

    def __init__(self, state: CloudState, clock: Any = time.monotonic) -> None:
        self.state = state
        self.clock = clock
        #: server id -> [time of the last advance, CPU seconds so far]
        self.counters: dict[str, list[float]] = {}
        self.wobble: dict[str, random.Random] = {}
        self.down: set[str] = set()

    def register(self, router: Router) -> None:
        """Add the routes."""
        router.add_service(Service("libvirt", _error_body), "/libvirt")
        router.add("GET", "/libvirt/{host}/metrics", self.metrics, service="libvirt",
                   auth=False)
        router.add("POST", "/_fake/usage/{server}", self.set_usage, service="control",
                   auth=False)
        router.add("POST", "/_fake/exporter-down/{host}", self.take_down, service="control",
                   auth=False)
        router.add("DELETE", "/_fake/exporter-down/{host}", self.bring_up, service="control",
                   auth=False)

    def _advance(self, rec: ServerRecord, now: float) -> float:
        """The server's CPU seconds, advanced to now at its usage."""
        counter = self.counters.setdefault(rec.id, [now, 0.0])
        usage = rec.model.usage or {}
        mean, std = float(usage.get("cpu_mean", 0.0)), float(usage.get("cpu_std", 0.0))
        if std > 0:
            rng = self.wobble.setdefault(rec.id, random.Random(rec.id))
            mean = max(rng.gauss(mean, std), 0.0)
        counter[1] += max(mean, 0.0) * max(now - counter[0], 0.0)
        counter[0] = now
        return counter[1]

    def metrics(self, req: Request) -> Response:
        """The exposition text of one host's domains."""
        name = req.params["host"]
        now = self.clock()
        lines = ["# HELP libvirt_domain_info_cpu_time_seconds_total Amount of CPU time used "
                 "by the domain, in seconds.",
                 "# TYPE libvirt_domain_info_cpu_time_seconds_total counter"]
        info, vcpus, memory = [], [], []
        with self.state.locked():
            host = self.state.host(name)
            if host is None:
                raise HTTPError(404, f"unknown host {name!r}")
            if host.power != "on" or host.name in self.down:
                raise HTTPError(503, f"libvirt exporter of {host.name} is down")
            for rec in self.state.server_list:
                if rec.host != host.name or rec.status not in ("ACTIVE", "MIGRATING"):
                    continue
                domain = f"instance-{rec.position + 1:08x}"
                seconds = self._advance(rec, now)
                lines.append(f'libvirt_domain_info_cpu_time_seconds_total{{domain="{domain}"}} '
                             f"{seconds:.6f}")
                vcpus.append(f'libvirt_domain_info_virtual_cpus{{domain="{domain}"}} '
                             f"{rec.model.vcpus}")
                memory.append(f'libvirt_domain_info_maximum_memory_bytes{{domain="{domain}"}} '
                              f"{rec.model.memory_mb * 2 ** 20}")
                info.append(f'libvirt_domain_openstack_info{{domain="{domain}",'
                            f'flavor_name="{rec.flavor.name}",instance_id="{rec.id}",'
                            f'instance_name="{rec.name}",project_id="{rec.project_id}",'
                            f'project_name="",user_id="{rec.user_id}",user_name=""}} 1')
        lines += ["# TYPE libvirt_domain_info_virtual_cpus gauge", *vcpus,
                  "# TYPE libvirt_domain_info_maximum_memory_bytes gauge", *memory,
                  "# TYPE libvirt_domain_openstack_info gauge", *info]
        return Response(200, ("\n".join(lines) + "\n").encode(),
                        {"Content-Type": "text/plain; version=0.0.4; charset=utf-8"})

    def set_usage(self, req: Request) -> Response:
        """POST /_fake/usage/{server}: its usage from now on."""
        body = req.json()
        if not isinstance(body, dict) or not isinstance(body.get("cpu_mean"), (int, float)):
            raise HTTPError(400, 'expected {"cpu_mean": vcpus, "cpu_std": vcpus}')
        usage = {"cpu_mean": float(body["cpu_mean"]),
                 "cpu_std": float(body.get("cpu_std") or 0.0)}
        now = self.clock()
        with self.state.locked():
            rec = self.state.server(req.params["server"])
            if rec is None:
                raise HTTPError(404, f"unknown server {req.params['server']!r}")
            self._advance(rec, now)
            rec.model = replace(rec.model, usage=usage)
        return Response(200, {"server": rec.id, "usage": usage})

    def take_down(self, req: Request) -> Response:
        """POST /_fake/exporter-down/{host}: its exporter answers 503."""
        self.down.add(req.params["host"])
        return Response(204)

    def bring_up(self, req: Request) -> Response:
        """DELETE /_fake/exporter-down/{host}."""
        self.down.discard(req.params["host"])
        return Response(204)


def scrape_configs(address: str, hosts: list[str], interval: str = "1s") -> list[dict[str, Any]]:
    """A Prometheus ``scrape_configs`` list that scrapes each host's exporter on the fake
    cloud at ``address`` (host:port), as a real deployment scrapes one exporter per host:
    ``instance`` is the host's name."""
    return [{"job_name": "libvirt", "scrape_interval": interval,
             "static_configs": [{"targets": [address],
                                 "labels": {"__metrics_path__": f"/libvirt/{h}/metrics",
                                            "instance": h}} for h in hosts]}]
