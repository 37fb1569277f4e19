"""Run OpenStack Watcher's vm_workload_consolidation strategy on a consolidator scenario file.

The benchmarks' real peer. Run it with the python of a separate venv that has python-watcher
17.0.0 (docs/benchmarks.rst, section *Peer*), not the project's:

    /work/venvs/watcher/bin/python tools/bench/watcher_peer.py SCENARIO.yaml [--cpu-util 1.0]

It reads the scenario (YAML or JSON: hosts with vcpus, memory_mb, disk_gb, allocation ratios and
reserved amounts; instances with host, vcpus, memory_mb, disk_gb), builds Watcher's in-memory
cluster data model (ModelRoot, ComputeNode, Instance and their mapping) and runs the strategy's
own execute() (pre, do and post phases, then the global efficacy) without any OpenStack
service: the model is given to the strategy directly instead of through the Nova collector, the
datasource is a stub, and the OpenStack clients object raises if anything touches it. It does
not import consolidator.

The model is built as Watcher's Nova collector builds it (collector/nova.py): a node per host
named by its nova-compute service host (``compute_host``, default the name), with vCPU, RAM and
disk totals, reserved amounts and allocation ratios as Placement's inventories give them, the
service's status and state (a powered-off host's service is down, so the strategy leaves it
alone); an instance per instance with its flavor's vCPUs, RAM and disk and its state (ACTIVE ->
active, SHUTOFF -> stopped...). Hosts and instances enter the model in the file's order (the
collector's order depends on its threads and on Nova's listing; shuffling both moves the result
by about one host). Watcher does not know the scenario's ``resources`` (PCPU, VGPU, CUSTOM_*),
traits or server groups, so they are ignored; an instance whose metadata has
``consolidator:exclude: "true"`` is excluded as an audit scope would exclude it.

The stub datasource answers the six metrics the strategy asks for (DATASOURCE_METRICS):
  - instance_cpu_usage: ``--cpu-util`` x 100 % of the instance's vCPUs (default 1.0: each
    instance uses its whole allocation; the strategy then packs by allocation, as it does when a
    metric is missing);
  - instance_ram_usage and instance_ram_allocated: the flavor's memory_mb;
  - instance_root_disk_size: the flavor's disk_gb;
  - host_cpu_usage and host_ram_usage: no data (None), so a host's load is the sum of its
    instances' (the strategy takes the larger of the two);
so the strategy's two checks, utilisation <= capacity and allocation <= free allocation, both
see the scenario's numbers at Watcher's own capacities ((total - reserved) x ratio).

It prints one JSON object on stdout:
  {"hosts_busy", "migrations", "seconds", "instances", "hosts", "valid", "cpu_util",
   "build_seconds", "import_seconds", "hosts_before"}
hosts_busy counts the hosts that hold at least one instance after the solution (the hosts it
disables are empty, so not counted); migrations counts its migrate actions; seconds is the
strategy's execute() alone (build_seconds is the model's construction, import_seconds
Watcher's imports; the whole process takes one to two seconds more than seconds). ``valid`` is
the check below; when it fails the JSON is still printed, a line on stderr names the problem,
and the exit status is 1. Bad input: one line on stderr, exit 2.

The check: replaying the migrate actions in order from the scenario's placement, each
instance leaves the host the action names and the result is the model's final placement; and
no host is over its allocation capacity (vCPU, RAM, disk at the host's ratios) at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import sys
import time
import uuid
from pathlib import Path
from typing import Any

#: Keys of an instance's Nova status mapped to Watcher's InstanceState values.
STATES = {"ACTIVE": "active", "SHUTOFF": "stopped", "PAUSED": "paused",
          "SUSPENDED": "suspended", "ERROR": "error", "BUILD": "building"}
#: The metadata key with which consolidator pins an instance (Watcher: excluded by scope).
EXCLUDE_KEY = "consolidator:exclude"


class PeerError(Exception):
    """Bad input: the message names the problem and the fix."""


class NoOpenStack:
    """Stands in for Watcher's OpenStack clients: any use is a bug of this harness."""

    def __getattr__(self, name: str) -> Any:
        raise RuntimeError(f"the strategy asked for OpenStack client {name!r}; "
                           "watcher_peer runs without OpenStack services")


class StubDatasource:
    """Answers the strategy's metric queries from the scenario's allocations."""

    NAME = "consolidator-scenario"

    def __init__(self, cpu_util: float) -> None:
        self.cpu_percent = cpu_util * 100.0

    def get_instance_cpu_usage(self, resource: Any, **_: Any) -> float:
        """Percent of the instance's vCPUs in use."""
        return self.cpu_percent

    def get_instance_ram_usage(self, resource: Any, **_: Any) -> float:
        """MB in use: the flavor's memory."""
        return float(resource.memory)

    def get_instance_ram_allocated(self, resource: Any, **_: Any) -> float:
        """MB allocated: the flavor's memory."""
        return float(resource.memory)

    def get_instance_root_disk_size(self, resource: Any, **_: Any) -> float:
        """GB of disk: the flavor's disk."""
        return float(resource.disk)

    def get_host_cpu_usage(self, resource: Any, *_: Any, **__: Any) -> None:
        """No host-level measure: the strategy sums the host's instances."""
        return None

    def get_host_ram_usage(self, resource: Any, *_: Any, **__: Any) -> None:
        """No host-level measure: the strategy sums the host's instances."""
        return None


def read_scenario(path: Path) -> dict[str, Any]:
    """The scenario document (YAML, or JSON by suffix); errors name the file."""
    import yaml

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise PeerError(f"{path}: cannot read: {exc.strerror or exc}") from None
    try:
        if path.suffix.lower() == ".json":
            doc = json.loads(text)
        else:
            doc = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506
    except (ValueError, yaml.YAMLError) as exc:
        raise PeerError(f"{path}: not a valid scenario file: "
                        f"{str(exc).splitlines()[0]}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("hosts"), list):
        raise PeerError(f"{path}: expected a mapping with a 'hosts' list (DESIGN.md section 3)")
    return doc


def _uuid(kind: str, entry: dict[str, Any]) -> str:
    return str(entry.get("id") or uuid.uuid5(uuid.NAMESPACE_URL, f"{kind}:{entry['name']}"))


def _service_state(host: dict[str, Any]) -> str:
    """nova-compute's state: a powered-off host's service is down (DESIGN.md section 6)."""
    off = host.get("power") in ("off", False)
    return "down" if off else str(host.get("state", "up"))


def build_model(doc: dict[str, Any], source: str) -> Any:
    """Watcher's ModelRoot for the scenario: its nodes, instances and their mapping."""
    from watcher.decision_engine.model import element, model_root

    model = model_root.ModelRoot()
    nodes: dict[str, Any] = {}
    for i, h in enumerate(doc["hosts"]):
        try:
            node = element.ComputeNode(
                uuid=_uuid("host", h), hostname=h.get("compute_host") or h["name"],
                status=h.get("status", "enabled"), state=_service_state(h),
                disabled_reason=h.get("disabled_reason"),
                vcpus=h["vcpus"], vcpu_reserved=h.get("reserved_vcpus", 0),
                memory=h["memory_mb"], memory_mb_reserved=h.get("reserved_memory_mb", 0),
                disk=h["disk_gb"], disk_gb_reserved=h.get("reserved_disk_gb", 0),
                vcpu_ratio=float(h.get("cpu_allocation_ratio", 1.0)),
                memory_ratio=float(h.get("ram_allocation_ratio", 1.0)),
                disk_ratio=float(h.get("disk_allocation_ratio", 1.0)))
        except (KeyError, TypeError, ValueError) as exc:
            raise PeerError(f"{source}: hosts[{i}]: bad or missing key {exc} "
                            "(needs name, vcpus, memory_mb, disk_gb)") from None
        model.add_node(node)
        nodes[h["name"]] = node
    for i, v in enumerate(doc.get("instances") or []):
        try:
            node = nodes[v["host"]]
            metadata = dict(v.get("metadata") or {})
            inst = element.Instance(
                uuid=_uuid("instance", v), name=v["name"],
                state=STATES.get(str(v.get("status", "ACTIVE")).upper(),
                                 str(v.get("status", "active")).lower()),
                vcpus=v["vcpus"], memory=v["memory_mb"], disk=v["disk_gb"],
                metadata=metadata, host=node.hostname, hypervisor_hostname=node.hostname,
                watcher_exclude=str(metadata.get(EXCLUDE_KEY, "")).lower() == "true")
        except (KeyError, TypeError, ValueError) as exc:
            raise PeerError(f"{source}: instances[{i}]: bad or missing key {exc} (needs "
                            "name, host (a listed host), vcpus, memory_mb, disk_gb)") from None
        model.add_instance(inst)
        model.map_instance(inst, node)
    return model


def make_strategy(model: Any, cpu_util: float) -> Any:
    """The strategy, given the model and the stub datasource instead of Nova and a metrics DB."""
    from watcher.common import utils
    from watcher.decision_engine.strategy.strategies import vm_workload_consolidation as vwc

    strategy = vwc.VMWorkloadConsolidation(config=utils.Struct(datasources=None),
                                           osc=NoOpenStack())
    strategy.input_parameters = utils.Struct(period=3600, granularity=300)
    strategy._compute_model = model  # noqa: SLF001 - what the Nova collector would set
    strategy._datasource_backend = StubDatasource(cpu_util)  # noqa: SLF001 - a metrics DB
    return strategy


def placement(model: Any) -> dict[str, str]:
    """Instance uuid -> node hostname, as the model maps them."""
    return {uuid_: model.get_node_by_instance_uuid(uuid_).hostname
            for uuid_ in model.get_all_instances()}


def check(doc: dict[str, Any], before: dict[str, str], model: Any,
          actions: list[dict[str, Any]]) -> list[str]:
    """Problems with the solution: a bad replay, or a host over its allocation capacity."""
    problems = []
    where = dict(before)
    for a in actions:
        p = a["input_parameters"]
        if where.get(p["resource_id"]) != p["source_node"]:
            problems.append(f"migration of {p['resource_name']} from {p['source_node']}, "
                            f"but it is on {where.get(p['resource_id'])}")
        where[p["resource_id"]] = p["destination_node"]
    after = placement(model)
    if where != after:
        moved = sum(1 for k in after if where.get(k) != after[k])
        problems.append(f"replaying the migrations leaves {moved} instances elsewhere than "
                        "the strategy's model")
    for node in model.get_all_compute_nodes().values():
        used = model.get_node_used_resources(node)
        for name, cap in (("vcpu", node.vcpu_capacity), ("memory", node.memory_mb_capacity),
                          ("disk", node.disk_gb_capacity)):
            if used[name] > cap + 1e-9:
                problems.append(f"{node.hostname}: {name} {used[name]} over capacity {cap}")
    return problems


def run(path: Path, cpu_util: float) -> tuple[dict[str, Any], list[str]]:
    """Build, run and check; the JSON result and the problems found."""
    doc = read_scenario(path)
    started = time.perf_counter()
    model = build_model(doc, str(path))
    before = placement(model)
    build_seconds = time.perf_counter() - started
    strategy = make_strategy(model, cpu_util)
    started = time.perf_counter()
    solution = strategy.execute()
    seconds = time.perf_counter() - started
    migrations = [a for a in solution.actions if a["action_type"] == strategy.MIGRATION]
    problems = check(doc, before, model, migrations)
    nodes = model.get_all_compute_nodes().values()
    busy = sum(1 for n in nodes if model.get_node_instances(n))
    result = {"hosts_busy": busy, "migrations": len(migrations), "seconds": round(seconds, 3),
              "instances": len(before), "hosts": len(nodes), "valid": not problems,
              "cpu_util": cpu_util, "build_seconds": round(build_seconds, 3),
              "hosts_before": len(set(before.values()))}
    return result, problems


def main() -> None:
    """Parse the arguments, run the strategy, print the JSON line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenario", type=Path, help="scenario file (YAML or JSON)")
    parser.add_argument("--cpu-util", type=float, default=1.0,
                        help="each instance's CPU use, a fraction of its vCPUs (default 1.0)")
    args = parser.parse_args()
    if not 0 < args.cpu_util <= 1:
        parser.error("--cpu-util must be in (0, 1], e.g. 1.0")
    logging.basicConfig(level=logging.ERROR)  # the strategy logs every move at INFO
    started = time.perf_counter()
    try:
        # watcher.common.clients sets warnings to "once", so eventlet's and oslo's
        # deprecation warnings at import are silenced by hiding stderr instead.
        with contextlib.redirect_stderr(io.StringIO()):
            import watcher.decision_engine.strategy.strategies  # noqa: F401
    except ImportError as exc:
        print(f"watcher_peer: cannot import Watcher ({exc}); run this with the python of a "
              "venv that has python-watcher 17.0.0 (docs/benchmarks.rst, section Peer)",
              file=sys.stderr)
        sys.exit(2)
    import_seconds = time.perf_counter() - started
    try:
        result, problems = run(args.scenario, args.cpu_util)
        result["import_seconds"] = round(import_seconds, 3)
    except PeerError as exc:
        print(f"watcher_peer: {exc}", file=sys.stderr)
        sys.exit(2)
    print(json.dumps(result))
    if problems:
        print(f"watcher_peer: invalid solution: {problems[0]} "
              f"({len(problems)} problems in all)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
