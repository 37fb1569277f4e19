"""From the config to the typed settings each use case takes: the one module that reads it.

The planner's defaults and rules, the executor's limits, the inventory's paging, fallback
ratios and telemetry source, the energy model, the daemon's schedule, the metrics endpoint and
where the database, cloud and BMC file are: each is read here, in one function, so a new option
is read in exactly one place and every other module takes the objects made here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from consolidator.app.config import Config
from consolidator.core.constraints import Rules, parse_name_list
from consolidator.core.errors import ConfigError, UsageError
from consolidator.core.plan import DEFAULT_IDLE_WATTS
from consolidator.core.planner import PlanSettings
from consolidator.core.scope import Scope, parse_scope
from consolidator.core.usage_power import CoolDown

if TYPE_CHECKING:
    from consolidator.execution.executor import ExecutorSettings
    from consolidator.openstack.inventory import FallbackRatios
    from consolidator.telemetry.prometheus import PrometheusSource


@dataclass(frozen=True)
class ContextSettings:
    """Where the database, the cloud and the BMC file are ([database], [cloud], [power])."""

    database_url: str
    cloud_name: str
    bmc_file: str


@dataclass(frozen=True)
class PlannerChoices:
    """What a plan is made with, the request's choices aside ([planner], and the [telemetry]
    usage fallbacks and history of the ucac capacity model)."""

    algorithm: str
    ranking: str
    spare: int
    capacity_model: str
    confidence: float
    objective: str
    #: None: no limit; 0: no migration (as --max-migrations 0).
    max_migrations: int | None
    fallback_mean: float
    fallback_cov: float
    usage_history: int
    #: The raw [zones] section: key -> 'HQxRATIO,LQxRATIO'.
    zones: dict[str, str]
    #: The raw [cpu_speed] section: 'default', 'aggregate:NAME' or a glob -> speed.
    cpu_speed: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class EnergySettings:
    """[energy]: whether snapshots read the BMCs' draw, the fallback idle draw and the
    readings fitted to estimate it."""

    read_power: bool
    idle_watts: float
    history: int


@dataclass(frozen=True)
class InventorySettings:
    """How the live cloud is read: [cloud] ratios, [inventory] paging and workers, and the
    [telemetry] Prometheus source (None without a URL)."""

    ratios: FallbackRatios
    page_size: int
    workers: int
    telemetry: PrometheusSource | None
    #: [telemetry] min_samples: the short-window prior, also where no Prometheus is set (a
    #: replay reads its windows from the trace).
    min_samples: int = 0


@dataclass(frozen=True)
class DaemonSettings:
    """[daemon], the raw [padding] windows and the default spare hosts ([planner] spare)."""

    schedule: str
    timezone: str
    auto_apply: bool
    misfire_grace_time: int
    lease_ttl: float
    capacity_watch_interval: int
    padding: dict[str, str]
    hang_timeout: float
    spare: int
    #: Seconds between looks for the API's jobs (0: none run).
    job_interval: float = 5.0


@dataclass(frozen=True)
class MetricsSettings:
    """[metrics]: the Prometheus endpoint's port (0: none) and address."""

    port: int
    address: str


def _options(config: Config, section: str, *names: str) -> dict[str, Any]:
    """name -> value, for options of one section named as the settings' fields are."""
    return {name: config.get(section, name) for name in names}


def context_settings(config: Config) -> ContextSettings:
    """[database] url, [cloud] name and [power] bmc_file."""
    return ContextSettings(database_url=config.get("database", "url"),
                           cloud_name=config.get("cloud", "name"),
                           bmc_file=config.get("power", "bmc_file"))


def planner_choices(config: Config) -> PlannerChoices:
    """The [planner] choices (a request may override some), read once."""
    return PlannerChoices(
        **_options(config, "planner", "algorithm", "ranking", "spare", "capacity_model",
                   "confidence", "objective", "max_migrations"),
        **_options(config, "telemetry", "fallback_mean", "fallback_cov"),
        usage_history=config.get("telemetry", "history"), zones=config.section("zones"),
        cpu_speed=config.section("cpu_speed"))


def read_name_list(path: str | Path) -> frozenset[str]:
    """The instance names or ids a list file holds (see core.constraints.parse_name_list)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the importance list: "
                          f"{exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError.not_utf8(path, exc) from None
    return parse_name_list(text)


def _listed(config: Config, name: str) -> tuple[str, ...]:
    """A comma-separated [planner] option, as its stripped non-empty items."""
    return tuple(g.strip() for g in config.get("planner", name).split(",") if g.strip())


def config_scope(config: Config) -> Scope | None:
    """[planner] scope; ConfigError naming the option when it is not a scope."""
    try:
        return parse_scope(config.get("planner", "scope"))
    except UsageError as exc:
        raise ConfigError(f"[planner] {exc}") from None


def rules_from_config(config: Config) -> Rules:
    """The planner's [planner] rules (reading the importance file, when one is named)."""
    listed = config.get("planner", "importance_file")
    return Rules(excluded_hosts=_listed(config, "excluded_hosts"),
                 excluded_aggregates=_listed(config, "excluded_aggregates"),
                 excluded_projects=frozenset(_listed(config, "excluded_projects")),
                 scope=config_scope(config),
                 exclude_key=config.get("planner", "exclude_key"),
                 importance_key=config.get("planner", "importance_key"),
                 importance_extra_spec=config.get("planner", "importance_extra_spec"),
                 unimportant=read_name_list(listed) if listed else frozenset())


def _idle_watts(config: Config) -> float:
    """[energy] idle_watts; the deprecated [planner] idle_watts while the former is at its
    default."""
    watts = float(config.get("energy", "idle_watts"))
    old = float(config.get("planner", "idle_watts"))
    return old if watts == DEFAULT_IDLE_WATTS and old != DEFAULT_IDLE_WATTS else watts


def energy_settings(config: Config) -> EnergySettings:
    """The [energy] settings, with the deprecated [planner] idle_watts folded in."""
    return EnergySettings(**_options(config, "energy", "read_power", "history"),
                          idle_watts=_idle_watts(config))


def settings_from_config(config: Config) -> PlanSettings:
    """Rules plus the per-host limit and idle watts."""
    return PlanSettings(rules=rules_from_config(config),
                        per_host_limit=config.get("planner", "max_migrations_per_host"),
                        idle_watts=_idle_watts(config),
                        n_plus_one=config.get("planner", "n_plus_one"))


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


def keep_days(config: Config) -> int:
    """[database] keep_days: days of history a prune keeps (0: everything)."""
    return int(config.get("database", "keep_days"))


def freshness_settings(config: Config) -> float:
    """[executor] max_drift: the percentage of drifted instances apply tolerates (0: any)."""
    return float(config.get("executor", "max_drift"))


def inventory_settings(config: Config) -> InventorySettings:
    """How read_cloud reads the live cloud."""
    from consolidator.openstack.inventory import FallbackRatios

    ratios = FallbackRatios(cpu=config.get("cloud", "cpu_allocation_ratio"),
                            ram=config.get("cloud", "ram_allocation_ratio"),
                            disk=config.get("cloud", "disk_allocation_ratio"))
    return InventorySettings(ratios=ratios, page_size=config.get("inventory", "page_size"),
                             workers=config.get("inventory", "workers"),
                             telemetry=_telemetry_source(config),
                             min_samples=config.get("telemetry", "min_samples"))


def _telemetry_source(config: Config) -> PrometheusSource | None:
    """The [telemetry] Prometheus source, or None when no URL is set."""
    url = config.get("telemetry", "prometheus_url")
    if not url:
        return None
    from consolidator.telemetry.prometheus import PrometheusSource

    return PrometheusSource(
        url=url, mean_query=config.get("telemetry", "cpu_mean_query"),
        std_query=config.get("telemetry", "cpu_std_query"),
        instance_label=config.get("telemetry", "instance_label"),
        timeout=config.get("telemetry", "timeout"),
        count_query=config.get("telemetry", "cpu_count_query"),
        min_samples=config.get("telemetry", "min_samples"))


def daemon_settings(config: Config) -> DaemonSettings:
    """The daemon's schedule, lease, watch and padding."""
    return DaemonSettings(
        **_options(config, "daemon", "schedule", "timezone", "auto_apply", "misfire_grace_time",
                   "lease_ttl", "capacity_watch_interval", "hang_timeout", "job_interval"),
        padding=config.section("padding"), spare=config.get("planner", "spare"))


@dataclass(frozen=True)
class ReliefSettings:
    """[relief]: how often the watch runs, its cap on migrations, where it reads current
    usage (None without [telemetry] prometheus_url), and the planner's rules, limits and
    usage model (at [planner] confidence; speeds filled in per cluster by the use case)."""

    interval: int
    #: None: as many as it takes; 0: none.
    max_migrations: int | None
    source: PrometheusSource | None
    plan: PlanSettings
    cpu_speed: dict[str, str]
    #: The capacity watch: power on above this share of the powered cores, following the
    #: trend of trend_query over trend_window seconds, lookahead seconds ahead.
    headroom: float = 0.9
    #: cloud: the powered hosts' usage taken together; hosts: the sum of each one's UCaC.
    watch_demand: str = "cloud"
    trend_query: str = ""
    trend_window: int = 1800
    lookahead: int = 900
    cool_down: CoolDown = field(default_factory=CoolDown)
    #: The [relief] usage queries, also where no Prometheus is set (a replay reads their
    #: windows).
    mean_query: str = ""
    std_query: str = ""
    #: Relieve only hosts over their cores at this confidence (0: [planner] confidence).
    trigger_confidence: float = 0.7


def relief_settings(config: Config) -> ReliefSettings:
    """The relief watch's settings."""
    from consolidator.core.constraints import UsageModel

    source = _telemetry_source(config)
    if source is not None:
        source = replace(source, mean_query=config.get("relief", "cpu_mean_query"),
                         std_query=config.get("relief", "cpu_std_query"),
                         fresh_query=config.get("relief", "fresh_query"),
                         min_samples=0, count_query="")
    usage = UsageModel(confidence=config.get("planner", "confidence"),
                       fallback_mean=config.get("telemetry", "fallback_mean"),
                       fallback_cov=config.get("telemetry", "fallback_cov"))
    return ReliefSettings(
        **_options(config, "relief", "interval", "max_migrations", "headroom", "trend_query",
                   "trend_window", "lookahead", "trigger_confidence", "watch_demand"),
        mean_query=config.get("relief", "cpu_mean_query"),
        std_query=config.get("relief", "cpu_std_query"),
        source=source, plan=replace(settings_from_config(config), usage=usage),
        cpu_speed=config.section("cpu_speed"),
        cool_down=CoolDown(min_on_time_s=config.get("power", "min_on_time"),
                           max_per_hour=config.get("power", "max_actions_per_hour")))


@dataclass(frozen=True)
class NotifySettings:
    """[notify]: the webhook (empty: none), its format, HMAC secret, timeout and retries;
    the bus (empty: none) and its topic; the outbox's bound."""

    webhook_url: str
    secret: str
    timeout: float
    attempts: int
    backoff: float
    deadline: float
    webhook_format: str = "cloudevents"
    transport_url: str = ""
    topic: str = "versioned_notifications"
    queue_size: int = 1000


def notify_settings(config: Config) -> NotifySettings:
    """The [notify] webhook and bus."""
    return NotifySettings(**_options(config, "notify", "webhook_url", "secret", "timeout",
                                     "attempts", "backoff", "deadline", "webhook_format",
                                     "transport_url", "topic", "queue_size"))


def check_notify(config: Config) -> None:
    """ConfigError when [notify] transport_url is set and oslo.messaging is not installed
    (one line naming the extra) or does not know its driver."""
    url = config.get("notify", "transport_url")
    if url:
        from consolidator.telemetry.bus import check_transport_url

        check_transport_url(url)


def metrics_settings(config: Config) -> MetricsSettings:
    """The [metrics] endpoint."""
    return MetricsSettings(**_options(config, "metrics", "port", "address"))


def cron_trigger(config: Config) -> Any:
    """The cycle's CronTrigger from [daemon] schedule and timezone; ConfigError if invalid."""
    from apscheduler.triggers.cron import CronTrigger

    expression = config.get("daemon", "schedule")
    zone = config.get("daemon", "timezone") or None
    try:
        return CronTrigger.from_crontab(expression, timezone=zone) if zone else \
            CronTrigger.from_crontab(expression)
    except (ValueError, LookupError) as exc:
        of = f"[daemon] schedule = {expression!r}" + (f" / timezone = {zone!r}" if zone else "")
        form = "" if isinstance(exc, LookupError) else (
            " (a cron expression of five fields: minute hour day month weekday, e.g. "
            "'0 * * * *' for hourly)")
        raise ConfigError(f"{of}: {str(exc).splitlines()[0]}{form}") from None


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
        auto = ["auto"] if option == "algorithm" else []
        if name and name not in registry and name not in auto:
            raise ConfigError(f"{where}[planner] {option} = {name!r}: unknown {registry.kind}: "
                              f"choose one of {', '.join(sorted([*auto, *registry.names()]))}")


@dataclass(frozen=True)
class ReviewSettings:
    """[review]: four eyes on plans."""

    distinct_approver: bool
    require_approval: bool


def review_settings(config: Config) -> ReviewSettings:
    """[review] distinct_approver and require_approval."""
    return ReviewSettings(**_options(config, "review", "distinct_approver",
                                     "require_approval"))


def check_review(config: Config) -> None:
    """[review] require_approval with [daemon] auto_apply contradict each other (the daemon
    would approve its own plans): ConfigError saying why."""
    if config.get("review", "require_approval") and config.get("daemon", "auto_apply"):
        where = f"{config.path}: " if config.path else ""
        raise ConfigError(f"{where}[review] require_approval = true and [daemon] auto_apply = "
                          f"true contradict each other: auto_apply applies the daemon's plans "
                          f"with nobody's approval; turn one of them off")


@dataclass(frozen=True)
class ApiSettings:
    """[api] and [oslo_policy]: where the API listens, how it validates tokens, its limits,
    its jobs and its policy."""

    bind: str
    port: int
    threads: int
    service_cloud: str
    auth_url: str
    job_timeout: float
    max_body_bytes: int
    max_limit: int
    policy_file: str
    enforce_scope: bool
    enforce_new_defaults: bool


def api_settings(config: Config) -> ApiSettings:
    """[api] and [oslo_policy]."""
    return ApiSettings(
        **_options(config, "api", "bind", "port", "threads", "service_cloud", "auth_url",
                   "job_timeout", "max_body_bytes", "max_limit"),
        **_options(config, "oslo_policy", "policy_file", "enforce_scope",
                   "enforce_new_defaults"))
