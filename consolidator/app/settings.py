"""From the config to the objects the core and the adapters take: one place for each.

Planner rules and settings, per-algorithm options, the executor's limits, the inventory's
fallback allocation ratios and the telemetry source are all read here, so a new option is
read in exactly one function.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from consolidator.app.config import Config
from consolidator.core.constraints import Rules, read_name_list
from consolidator.core.errors import ConfigError
from consolidator.core.model import Cluster
from consolidator.core.plan import DEFAULT_IDLE_WATTS
from consolidator.core.planner import PlanSettings
from consolidator.core.zones import zones_for_cluster

if TYPE_CHECKING:
    from consolidator.execution.executor import ExecutorSettings
    from consolidator.openstack.inventory import FallbackRatios
    from consolidator.telemetry.prometheus import PrometheusSource


def rules_from_config(config: Config) -> Rules:
    """The planner's [planner] rules."""
    globs = tuple(g.strip() for g in config.get("planner", "excluded_hosts").split(",")
                  if g.strip())
    listed = config.get("planner", "importance_file")
    return Rules(excluded_hosts=globs, exclude_key=config.get("planner", "exclude_key"),
                 importance_key=config.get("planner", "importance_key"),
                 importance_extra_spec=config.get("planner", "importance_extra_spec"),
                 unimportant=read_name_list(listed) if listed else frozenset(),
                 allow_cold_migration=config.get("planner", "allow_cold_migration"))


def idle_watts(config: Config) -> float:
    """[energy] idle_watts; the deprecated [planner] idle_watts while the former is at its
    default."""
    watts = float(config.get("energy", "idle_watts"))
    old = float(config.get("planner", "idle_watts"))
    return old if watts == DEFAULT_IDLE_WATTS and old != DEFAULT_IDLE_WATTS else watts


def settings_from_config(config: Config) -> PlanSettings:
    """Rules plus the per-host limit and idle watts."""
    return PlanSettings(rules=rules_from_config(config),
                        per_host_limit=config.get("planner", "max_migrations_per_host"),
                        idle_watts=idle_watts(config),
                        n_plus_one=config.get("planner", "n_plus_one"))


def algorithm_options(config: Config, algorithm: str, cluster: Cluster,
                      extra: dict[str, Any]) -> dict[str, Any]:
    """Options for an algorithm: what the config says for it, then the command line's."""
    options: dict[str, Any] = {}
    if algorithm in ("zoned-bestfit", "auto"):
        zones = zones_for_cluster(cluster, config.section("zones"))
        if zones is not None:
            options["zones"] = zones
    options.update(extra)
    return options


def executor_settings(config: Config, *, max_parallel: int | None = None,
                      on_timeout: str | None = None) -> ExecutorSettings:
    """The [executor] settings, with the command line's overrides."""
    from consolidator.execution.executor import ExecutorSettings

    return ExecutorSettings(
        max_parallel=max_parallel or config.get("executor", "max_parallel"),
        migration_timeout=config.get("executor", "migration_timeout"),
        poll_interval=config.get("executor", "poll_interval"),
        poll_first=config.get("executor", "poll_first"),
        power_timeout=config.get("executor", "power_timeout"),
        lease_ttl=config.get("executor", "lease_ttl"),
        on_timeout=on_timeout or config.get("executor", "on_timeout"),
        max_per_destination=config.get("executor", "max_parallel_per_destination"),
        low_demand_window=config.get("power", "low_demand_window"),
        low_demand_threshold=config.get("power", "low_demand_threshold"))


def fallback_ratios(config: Config) -> FallbackRatios:
    """[cloud] allocation ratios, for capacity read without Placement."""
    from consolidator.openstack.inventory import FallbackRatios

    return FallbackRatios(cpu=config.get("cloud", "cpu_allocation_ratio"),
                          ram=config.get("cloud", "ram_allocation_ratio"),
                          disk=config.get("cloud", "disk_allocation_ratio"))


def telemetry_source(config: Config) -> PrometheusSource | None:
    """The [telemetry] Prometheus source, or None when no URL is set."""
    url = config.get("telemetry", "prometheus_url")
    if not url:
        return None
    from consolidator.telemetry.prometheus import PrometheusSource

    return PrometheusSource(
        url=url, mean_query=config.get("telemetry", "cpu_mean_query"),
        std_query=config.get("telemetry", "cpu_std_query"),
        instance_label=config.get("telemetry", "instance_label"),
        timeout=config.get("telemetry", "timeout"))


def cron_trigger(config: Config) -> Any:
    """The cycle's CronTrigger from [daemon] schedule and timezone; ConfigError if invalid."""
    from apscheduler.triggers.cron import CronTrigger

    expression = config.get("daemon", "schedule")
    zone = config.get("daemon", "timezone") or None
    try:
        return CronTrigger.from_crontab(expression, timezone=zone) if zone else \
            CronTrigger.from_crontab(expression)
    except (ValueError, LookupError) as exc:
        raise ConfigError(f"[daemon] schedule = {expression!r} / timezone = {zone!r}: "
                          f"{str(exc).splitlines()[0]}") from None


def check_schedule(config: Config) -> None:
    """[daemon] schedule must be a cron expression the daemon's scheduler accepts (the same
    parser): ConfigError naming the value if not. The default needs no check."""
    if ("daemon", "schedule") not in config.values and \
            ("daemon", "timezone") not in config.values:
        return
    try:
        cron_trigger(config)
    except ConfigError as exc:
        where = f"{config.path}: " if config.path else ""
        raise ConfigError(f"{where}{exc}") from None


def check_plugin_names(config: Config) -> None:
    """[planner] algorithm and ranking must name registered plug-ins: ConfigError if not.

    The same registries back 'consolidator algorithms', so the valid names are listed.
    """
    from consolidator.core.algorithms.catalog import ALGORITHMS
    from consolidator.core.rankings.catalog import RANKINGS

    where = f"{config.path}: " if config.path else ""
    for option, registry in (("algorithm", ALGORITHMS), ("ranking", RANKINGS)):
        name = config.get("planner", option)
        if name and name not in registry and not (option == "algorithm" and name == "auto"):
            raise ConfigError(f"{where}[planner] {option} = {name!r}: unknown {registry.kind}: "
                              f"choose one of {', '.join(registry.names())}")
