"""A Prometheus-compatible instant-query endpoint serving the scenario's usage statistics.

``GET /prometheus/api/v1/query?query=...`` answers an instant vector with one sample per server
that has ``usage: {cpu_mean, cpu_std}`` in the scenario, labelled ``instance_uuid``. A query
that mentions ``stddev`` gets the standard deviations, one that mentions ``count_over_time``
a week of one-minute samples (the scenario's statistics stand for a long window), any other
query the means: enough for the telemetry client, whose queries are configurable. No auth, as
a plain Prometheus.
"""

from __future__ import annotations

import time
from typing import Any

from consolidator.emulators.fake.server import HTTPError, Request, Response, Router, Service
from consolidator.emulators.fake.state import CloudState

#: What a count_over_time query answers for every server with usage: a week of samples at 1 m.
SAMPLES = 7 * 24 * 60


def _error_body(status: int, message: str) -> dict[str, Any]:
    return {"status": "error", "errorType": "bad_data", "error": message}


class Prometheus:
    """Serves /prometheus/api/v1/query from the servers' usage statistics."""

    def __init__(self, state: CloudState) -> None:
        self.state = state

    def register(self, router: Router) -> None:
        """Add the route."""
        router.add_service(Service("prometheus", _error_body), "/prometheus")
        for method in ("GET", "POST"):
            router.add(method, "/prometheus/api/v1/query", self.query, service="prometheus",
                       auth=False)

    def query(self, req: Request) -> Response:
        """An instant vector of cpu_mean, cpu_std or a sample count per server."""
        expr = req.arg("query")
        if not expr:
            raise HTTPError(400, "parameter 'query' is missing")
        key = "cpu_std" if "stddev" in expr else "cpu_mean"
        counting = "count_over_time" in expr
        now = time.time()
        with self.state.locked():
            result = [{"metric": {"instance_uuid": rec.id, "instance_name": rec.name},
                       "value": [now, repr(float(SAMPLES if counting
                                                 else rec.model.usage[key]))]}
                      for rec in self.state.servers.values()
                      if rec.model.usage and key in rec.model.usage]
        return Response(200, {"status": "success",
                              "data": {"resultType": "vector", "result": result}})
