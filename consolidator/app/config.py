"""The INI configuration: a schema of every option, validated when the file is loaded.

Every option the code reads is declared in OPTIONS, so the configuration reference can be
generated from (and checked against) this module.
"""

from __future__ import annotations

import configparser
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from consolidator.app.option import Option
from consolidator.app.service_options import SERVICE_OPTIONS
from consolidator.core.errors import ConfigError, MissingConfigFile

DEFAULT_CONFIG_FILE = Path("/etc/consolidator/consolidator.conf")


OPTIONS: tuple[Option, ...] = (
    Option("database", "url", str, "",
           "SQLAlchemy URL of the database: sqlite:///PATH, postgresql://... (the "
           "[postgresql] extra) or mysql://... for MariaDB or MySQL (the [mysql] extra; "
           "InnoDB, a Galera cluster too). Empty: SQLite at "
           "$XDG_DATA_HOME/consolidator/consolidator.db (~/.local/share/...)."),
    Option("database", "keep_days", int, 0,
           "Days of history to keep: 'consolidator db prune' (and the daemon after each "
           "cycle) removes the snapshots, plans and journal rows older than this that no live "
           "plan or rollback still needs; 0 keeps everything.", range="[0, inf)"),
    Option("cloud", "name", str, "",
           "The clouds.yaml cloud to manage. Empty: $OS_CLOUD, or the only cloud defined."),
    Option("cloud", "cpu_allocation_ratio", float, 16.0,
           "CPU allocation ratio used when capacity comes from os-hypervisors "
           "(no Placement, or a compute API older than 2.88).", range="(0, inf)"),
    Option("cloud", "ram_allocation_ratio", float, 1.5,
           "RAM allocation ratio used when capacity comes from os-hypervisors.", range="(0, inf)"),
    Option("cloud", "disk_allocation_ratio", float, 1.0,
           "Disk allocation ratio used when capacity comes from os-hypervisors.", range="(0, inf)"),
    Option("inventory", "page_size", int, 1000,
           "Servers and hypervisors asked for per page (Nova caps it at its max_limit).",
           range="[1, inf)"),
    Option("inventory", "workers", int, 8,
           "Concurrent Placement requests while reading inventories and usages.",
           range="[1, inf)"),
    Option("planner", "algorithm", str, "auto",
           "The algorithm 'plan' and the daemon use when none is given "
           "(see 'consolidator algorithms'). auto: run the fast ones (zoned-bestfit "
           "and hvp LIGHT) and keep the plan that frees the most hosts within "
           "max_migrations."),
    Option("planner", "max_migrations", int, None,
           "The most migrations a plan made by 'plan' or the daemon may have, unless "
           "--max-migrations says otherwise; the plan that frees the most hosts within it is "
           "kept. 0: none (only hosts already empty are freed), as --max-migrations 0.",
           range="[0, inf)", empty="no limit"),
    Option("planner", "ranking", str, "",
           "The ranking that chooses among feasible target hosts; empty: the algorithm's own."),
    Option("planner", "spare", int, 0,
           "Empty, powered hosts to keep as padding when no --spare is given.", range="[0, inf)"),
    Option("planner", "excluded_hosts", str, "",
           "Comma-separated host-name globs that are never emptied and never receive."),
    Option("planner", "excluded_aggregates", str, "",
           "Comma-separated host aggregates whose hosts are never emptied, never receive and "
           "are never powered off (Masakari's reserved hosts, Blazar's freepool)."),
    Option("planner", "excluded_projects", str, "",
           "Comma-separated project ids whose instances never move."),
    Option("planner", "scope", str, "",
           "Plan only inside az=NAME, aggregate=NAME or host=GLOB: hosts outside it are left "
           "as they are; --scope overrides it. Empty: the whole cloud."),
    Option("planner", "exclude_key", str, "consolidator:exclude",
           "Instance metadata key; the value true pins the instance where it is."),
    Option("planner", "importance_key", str, "consolidator:important",
           "Instance metadata key; false (or no, low, 0) marks it not important."),
    Option("planner", "importance_extra_spec", str, "consolidator:important",
           "Flavor extra spec read when the metadata key is absent."),
    Option("planner", "importance_file", str, "",
           "A file listing instances (names or ids, one a line) that are not important, "
           "as in paper 004. Everything else is important."),
    Option("planner", "allow_cold_migration", bool, False,
           "Must stay false: consolidator moves instances by live migration only, so a "
           "SHUTOFF instance pins its host (the plan says so); true is refused, as the "
           "executor would skip the moves it planned."),
    Option("planner", "max_migrations_per_host", int, 2,
           "Migrations one source host sends at once; waves are built to respect it.",
           range="[1, inf)"),
    Option("planner", "n_plus_one", bool, True,
           "Keep enough hosts on that the ones left can absorb the failure of the most loaded "
           "of them (N+1); the plan names the hosts kept for it."),
    Option("planner", "idle_watts", float, 270.0,
           "Deprecated: use [energy] idle_watts (this one is read only while that one is at "
           "its default).", range="[0, inf)"),
    Option("planner", "objective", str, "hosts",
           "What plan and the daemon optimise when no --objective is given: hosts (free the "
           "most hosts, the algorithm's own choice) or energy (keep the hosts that draw least "
           "at idle, empty the ones that draw most).", ("hosts", "energy")),
    Option("planner", "capacity_model", str, "auto",
           "placement: Placement capacity only. ucac: also paper 003's chance constraint on "
           "CPU usage against each host's physical cores. auto: ucac when the snapshot "
           "carries measured CPU usage (telemetry), else placement.",
           ("auto", "placement", "ucac")),
    Option("planner", "confidence", float, 0.98,
           "The confidence alpha of the ucac capacity model and the ucac ranking.",
           range="[0.5, 1)"),
    Option("telemetry", "prometheus_url", str, "",
           "Prometheus HTTP API base URL for per-instance CPU usage; empty: no telemetry, "
           "the flavor fallback below is used."),
    Option("telemetry", "cpu_mean_query", str,
           "avg_over_time(consolidator:instance_cpu_usage:vcpus[7d])",
           "Instant query giving each instance's mean CPU usage in vCPUs."),
    Option("telemetry", "cpu_std_query", str,
           "stddev_over_time(consolidator:instance_cpu_usage:vcpus[7d])",
           "Instant query giving the standard deviation of each instance's CPU usage."),
    Option("telemetry", "cpu_count_query", str, "",
           "Instant query giving how many samples each instance has in the deviation's "
           "window; empty: cpu_std_query with stddev_over_time replaced by count_over_time."),
    Option("telemetry", "min_samples", int, 12,
           "An instance with fewer samples than this in its window (a fresh Prometheus, a "
           "new instance) is planned with at least its mean as deviation, as a deviation "
           "over a handful of samples says little; 0: no such prior.", range="[0, inf)"),
    Option("telemetry", "instance_label", str, "instance_uuid",
           "The label of the query results that holds the instance (server) UUID."),
    Option("telemetry", "timeout", float, 10.0, "Seconds to wait for Prometheus.",
           range="(0, inf)"),
    Option("executor", "max_parallel", int, 4,
           "Live migrations running at once, over the whole cloud (apply --max-parallel).",
           range="[1, inf)"),
    Option("executor", "migration_timeout", float, 1800.0,
           "Seconds a live migration may take before it counts as failed; its host is then "
           "left alone.", range="(0, inf)"),
    Option("executor", "poll_interval", float, 2.0,
           "The longest wait, in seconds, between two fresh reads of a migrating server: "
           "reads start poll_first apart and the wait doubles up to this.", range="(0, inf)"),
    Option("executor", "poll_first", float, 0.1,
           "Seconds before the first read of a migrating server (then doubled up to "
           "poll_interval), so a short migration is seen done at once.", range="(0, inf)"),
    Option("executor", "power_timeout", float, 600.0,
           "Seconds a host may take to reach the power state asked of its BMC. A shutdown "
           "still pending after it stays pending (the host disabled, with no work) until its "
           "BMC reads off: a warning and the gauge consolidator_shutdowns_overdue ask the "
           "operator to act.", range="(0, inf)"),
    Option("executor", "lease_ttl", float, 60.0,
           "Seconds an executor's lease on a cloud lasts without renewal (renewed every third).",
           range="(0, inf)"),
    Option("executor", "on_timeout", str, "abort",
           "What to do with a live migration that outlives migration_timeout: abort (DELETE "
           "the migration through Nova; the instance stays on its source) or force-complete "
           "(pause the guest and finish it).", choices=("abort", "force-complete")),
    Option("executor", "max_parallel_per_destination", int, 2,
           "Live migrations running into one host at once.", range="[1, inf)"),
    Option("executor", "max_drift", float, 10.0,
           "apply refuses a plan when more than this percentage of its snapshot's instances "
           "have moved, gone or appeared in the live cloud since (apply --replan plans again "
           "from a fresh snapshot instead); 0: no check.", range="[0, inf)"),
    Option("daemon", "schedule", str, "0 * * * *",
           "When the daemon's cycle runs: a 5-field cron expression (minute hour day month "
           "weekday); the default is hourly at minute 0, as in paper 004."),
    Option("daemon", "timezone", str, "",
           "Timezone of the schedule and of the [padding] windows, e.g. Europe/Oslo; empty: "
           "the system's.", form="timezone"),
    Option("daemon", "auto_apply", bool, False,
           "Apply each cycle's plan at once. Off: plans stay proposed and the log says how to "
           "approve them."),
    Option("daemon", "misfire_grace_time", int, 300,
           "Seconds late a cycle may still start (after a pause or a busy machine).",
           range="[0, inf)"),
    Option("daemon", "lease_ttl", float, 60.0,
           "Seconds the active daemon's lease lasts without renewal: a standby daemon on the "
           "same database takes over within this time after the active one dies.",
           range="(0, inf)"),
    Option("daemon", "hang_timeout", float, 1800.0,
           "Seconds a cycle or watch may go without progress (a step done, a migration "
           "polled) before the daemon counts it as hung and stops the systemd watchdog's "
           "pings, so that systemd restarts it (with WatchdogSec= in the unit). Keep it "
           "above the longest single step: a graceful shutdown, a migration's timeout.",
           range="(0, inf)"),
    Option("daemon", "capacity_watch_interval", int, 300,
           "Seconds between capacity checks that power hosts on when the free capacity of the "
           "powered hosts falls below the padding; 0 turns the watch off.", range="[0, inf)"),
    Option("relief", "interval", int, 300,
           "Seconds between relief watches: hosts whose CPU usage at [planner] confidence "
           "(UCaC, paper 003) exceeds their cores, or whose instances' memory exceeds their "
           "physical memory, shed the fewest and smallest instances to hosts where the chance "
           "constraint holds, powering hosts on when none has room. 0 turns the watch off "
           "(the daemon's cycle still relieves).", range="[0, inf)"),
    Option("relief", "cpu_mean_query", str,
           "avg_over_time(consolidator:instance_cpu_usage:vcpus[5m])",
           "Instant query giving each instance's current mean CPU usage in vCPUs, for relief."),
    Option("relief", "cpu_std_query", str,
           "stddev_over_time(consolidator:instance_cpu_usage:vcpus[3h])",
           "Instant query giving the standard deviation of each instance's recent CPU usage, "
           "for relief."),
    Option("relief", "fresh_query", str,
           'label_replace(libvirt_domain_openstack_info, "instance_uuid", "$1", '
           '"instance_id", "(.+)")',
           "Instant query listing the instances whose exporter answered the last scrape (a "
           "series that went stale is absent): relief counts the others at the flavor "
           "fallback, not at their last values. Empty: no check."),
    Option("relief", "max_migrations", int, None,
           "The most migrations one relief makes; 0: none (it only reports the overloads).",
           range="[0, inf)", empty="as many as it takes"),
    Option("relief", "trigger_confidence", float, 0.7,
           "Hysteresis: relieve only hosts whose usage exceeds their cores at this (lower) "
           "confidence, and bring them under at [planner] confidence, so that a host the "
           "cycle packed is not relieved at once; 0 (or any value not below [planner] "
           "confidence): [planner] confidence.", range="[0, 1)"),
    Option("relief", "watch_demand", str, "cloud",
           "What the capacity watch counts as the powered hosts' CPU usage at [planner] "
           "confidence. cloud: their instances' usage taken together (means summed, "
           "variances pooled: as many hosts on as the cloud's usage needs; one host over "
           "its cores is relief's to move). hosts: the sum of each host's own (every host at "
           "its tail at once: more spare hosts, more energy).", ("cloud", "hosts")),
    Option("relief", "headroom", float, 0.9,
           "The capacity watch powers hosts on (those consolidator powered off, the most "
           "efficient first) when the powered hosts' CPU usage at [planner] confidence "
           "(as watch_demand counts it), plus the rise its trend predicts, exceeds this "
           "share of their cores x speed.",
           range="(0, 1]"),
    Option("relief", "trend_query", str, "sum(consolidator:instance_cpu_usage:vcpus)",
           "Range query of the cloud's total CPU usage whose trend the capacity watch "
           "follows; empty: no trend."),
    Option("relief", "trend_window", int, 1800,
           "Seconds of history the trend is fitted over (local regression, as LR-MMT).",
           range="[60, inf)"),
    Option("relief", "lookahead", int, 900,
           "Seconds ahead the trend is followed: hosts come on before usage gets there.",
           range="[0, inf)"),
    Option("power", "bmc_file", str, "/etc/consolidator/bmc.yaml",
           "BMC credentials (see 'consolidator config sample bmc.yaml'); --bmc-file and "
           "CONSOLIDATOR_BMC_FILE override it."),
    Option("power", "low_demand_window", float, 0.0,
           "Minutes of low demand a power-off waits for, as VMware DPM and oVirt do: a host "
           "is powered off only if every demand sample (snapshot with usage statistics) of "
           "the window, and the last one before it, is at or below low_demand_threshold; "
           "otherwise it is emptied and left on, with the reason in the journal. 0: no wait.",
           range="[0, inf)"),
    Option("power", "low_demand_threshold", float, 0.5,
           "Demand at or below which it counts as low: the instances' mean CPU usage over "
           "the physical vCPUs of the powered-on hosts, 0 to 1.", range="[0, 1]"),
    Option("power", "min_on_time", float, 1800.0,
           "Seconds a host consolidator powered on stays on before the daemon's plans may "
           "power it off again (cool-down against flapping); 0: none.", range="[0, inf)"),
    Option("power", "max_actions_per_hour", int, 0,
           "The most power actions (on and off) the daemon's plans and capacity watch start "
           "in any hour; relief still powers hosts on for overloads. 0: no cap.",
           range="[0, inf)"),
    Option("telemetry", "history", int, 0,
           "Earlier snapshots of the same cloud whose usage statistics are pooled in.",
           range="[0, inf)"),
    Option("telemetry", "fallback_mean", float, 0.5,
           "Without telemetry: an instance's mean usage as a fraction of its vCPUs.",
           range="[0, inf)"),
    Option("telemetry", "fallback_cov", float, 0.5,
           "Without telemetry: the coefficient of variation (std / mean) of its usage.",
           range="[0, inf)"),
    Option("energy", "idle_watts", float, 270.0,
           "Idle draw of a host with no power reading from its BMC (270 W measured in 004): "
           "what a plan's saving and the energy objective count for it.", range="[0, inf)"),
    Option("energy", "read_power", bool, True,
           "Read each powered host's draw from its BMC (IPMI DCMI, Redfish Power or "
           "EnvironmentMetrics) when a snapshot is taken; a missing reading is not an error."),
    Option("energy", "history", int, 48,
           "Snapshots of the same cloud whose readings are fitted (idle + slope x load) to "
           "estimate each host's idle draw.", range="[0, inf)"),
    Option("metrics", "port", int, 0,
           "TCP port of the daemon's Prometheus endpoint (/metrics); 0: no endpoint.",
           range="[0, 65535]"),
    Option("metrics", "address", str, "127.0.0.1",
           "Address the Prometheus endpoint listens on (0.0.0.0 or :: for every interface).",
           form="address"),
    Option("notify", "webhook_url", str, "",
           "POST a JSON document to this http(s) URL at each event (a plan proposed, "
           "approved, started, succeeded or failed; a live migration started or ended; a "
           "power action; a drained, undrained or rescued host); empty: no webhook.",
           form="url"),
    Option("notify", "webhook_format", str, "cloudevents",
           "The webhook's body: cloudevents (CloudEvents 1.0, structured mode, whose data is "
           "the versioned payload) or legacy (0.1's document, for one release).",
           choices=("cloudevents", "legacy")),
    Option("notify", "transport_url", str, "",
           "Send versioned notifications to this oslo.messaging transport, e.g. "
           "rabbit://user:password@host:5672/ (the notify extra); empty: none. A config file "
           "holding a password in it is refused unless only its owner may read it.",
           form="transport_url"),
    Option("notify", "topic", str, "versioned_notifications",
           "The versioned notifications' topic: they go to TOPIC.info and TOPIC.error."),
    Option("notify", "queue_size", int, 1000,
           "Events that may wait for each receiver (the webhook, the bus: while the broker "
           "is down they wait, in order); past it a new event is dropped and counted.",
           range="[1, 1000000]"),
    Option("notify", "secret", str, "",
           "With it, each POST carries X-Consolidator-Signature: sha256=HMAC-SHA256 of the "
           "body under this secret. A config file holding it (or a password in [database] "
           "url) is refused unless only its owner may read it (chmod 600)."),
    Option("notify", "timeout", float, 5.0, "Seconds to wait for the webhook to answer.",
           range="(0, inf)"),
    Option("notify", "attempts", int, 4,
           "Deliveries tried per event (connection errors, 408, 429 and 5xx are retried, with "
           "backoff); a delivery that fails for good is journaled and never fails the "
           "operation.", range="[1, 20]"),
    Option("notify", "backoff", float, 0.5,
           "Seconds before the first retry; it doubles at each one.", range="[0, inf)"),
    Option("notify", "deadline", float, 30.0,
           "Seconds one event's delivery may take in all, retries included, however slowly "
           "the receiver answers; then it is dropped (logged, and counted in "
           "consolidator_notifications_dropped_total). Events leave from a queue, outside "
           "the executor lease: a slow receiver never holds a plan, a rollback or a signal; "
           "a command waits at most this long for its last events before it exits.",
           range="(0, inf)"),
) + SERVICE_OPTIONS


def comment_hint(raw: str) -> str:
    """What to add to a value's error when it ends in a comment: INI has none there."""
    return " (a comment goes on a line of its own: INI has none at the end of a line)" \
        if re.search(r"\s[#;]", raw) else ""


def _number(kind: type, text: str) -> Any:
    """int or float of the text; ValueError saying which is expected."""
    try:
        return kind(text)
    except ValueError:
        raise ValueError("expected a whole number" if kind is int else
                         "expected a number") from None


def _parse(option: Option, raw: str) -> Any:
    text = raw.strip()
    where = f"[{option.section}] {option.name} = {raw!r}"
    if option.empty and not text:
        return None
    try:
        if option.type is bool:
            lowered = text.lower()
            if lowered in ("1", "yes", "true", "on"):
                return True
            if lowered in ("0", "no", "false", "off"):
                return False
            raise ValueError("expected true or false")
        if option.type in (int, float):
            value = _number(option.type, text)
            if not option.range:
                return value
    except ValueError as exc:
        raise ConfigError(f"{where}: {exc}{comment_hint(raw)}") from None
    if option.range and option.type in (int, float):
        if not in_range(value, option.range):
            raise ConfigError(f"{where}: out of range: expected a number in {option.range}")
        return value
    problem = check_form(option.form, text) if option.form and text else None
    if problem:
        raise ConfigError(f"{where}: {problem}{comment_hint(raw)}")
    if option.choices and text not in option.choices:
        raise ConfigError(f"{where}: expected one of {', '.join(option.choices)}")
    return text


def in_range(value: float, interval: str) -> bool:
    """Whether value lies in an interval written "[1, inf)", "(0, 1)" or "[0, 65535]"."""
    low, high = (float(v) for v in interval[1:-1].split(","))
    above = value > low if interval[0] == "(" else value >= low
    below = value < high if interval[-1] == ")" else value <= high
    return above and below


def check_form(form: str, text: str) -> str | None:
    """Why a value does not have its fixed form, or None."""
    if form == "timezone":
        import zoneinfo

        try:
            zoneinfo.ZoneInfo(text)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            return "unknown time zone: give an IANA name such as Europe/Oslo or UTC"
        return None
    if form == "address":
        import ipaddress

        try:
            ipaddress.ip_address(text)
        except ValueError:
            label = r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)"
            if not re.fullmatch(rf"{label}(\.{label})*", text):
                return "not an IP address or a host name"
        return None
    if form == "url":
        if text and not re.match(r"^https?://[^/\s]+", text):
            return "not an http:// or https:// URL"
        return None
    if form == "transport_url":
        return None if re.match(r"^([a-z][a-z0-9+]*://\S*)?$", text) else \
            "not an oslo.messaging transport URL such as rabbit://user:password@host:5672/"
    raise ValueError(f"unknown form {form!r}")


@dataclass(frozen=True)
class Config:
    """Validated option values; read them with get(section, name)."""

    values: dict[tuple[str, str], Any] = field(default_factory=dict)
    path: Path | None = None
    sections: dict[str, dict[str, str]] = field(default_factory=dict)

    def get(self, section: str, name: str) -> Any:
        """The value of a declared option, or its default."""
        key = (section, name)
        if key in self.values:
            return self.values[key]
        option = _INDEX.get(key)
        if option is None:
            raise KeyError(f"undeclared option [{section}] {name}")
        return option.default

    def section(self, name: str) -> dict[str, str]:
        """The raw items of a free-form section (for example [padding])."""
        return dict(self.sections.get(name, {}))


_INDEX = {(o.section, o.name): o for o in OPTIONS}
#: Sections whose keys are free-form (per-host settings, windows), validated where parsed:
#: [zones] maps 'default', 'aggregate:NAME' or a host-name glob to 'HQxRATIO,LQxRATIO' (see
#: zones.py), and [cpu_speed] maps the same keys to a host's relative CPU speed (see
#: cpu_speed.py); their keys keep their case, since aggregate and host names are case-sensitive.
FREE_SECTIONS: set[str] = {"zones", "padding", "cpu_speed"}


def load_config(path: str | Path | None, *, required: bool = False) -> Config:
    """Load and validate an INI file. A missing default file gives the defaults."""
    if path is None:
        path = DEFAULT_CONFIG_FILE
        if not path.exists():
            return Config()
    path = Path(path)
    if not path.exists():
        if required:
            raise MissingConfigFile(f"{path}: no such config file")
        return Config()
    parser = _read_ini(path)
    config = config_from_sections(
        {s: _option_names(s, dict(parser.items(s)), path) for s in parser.sections()}, path)
    _refuse_readable_secrets(config, path)
    return config


def _refuse_readable_secrets(config: Config, path: Path) -> None:
    """ConfigError unless only the owner may read a file holding [notify] secret or a
    password in [database] url (as the BMC file's check does)."""
    from urllib.parse import urlsplit

    from consolidator.power.bmc_file import refuse_if_readable

    if config.get("notify", "secret"):
        refuse_if_readable(path, str(path), "[notify] secret")
    for section, name in (("database", "url"), ("notify", "transport_url")):
        try:
            password = urlsplit(config.get(section, name)).password
        except ValueError:
            password = None
        if password:
            refuse_if_readable(path, str(path), f"a password in [{section}] {name}")


def _read_ini(path: Path) -> configparser.ConfigParser:
    """Parse the INI file, keeping the case of names; errors are one line naming the file."""
    # Only '=' separates a name from its value: [zones] keys may hold ':' (aggregate:NAME).
    parser = configparser.ConfigParser(interpolation=None, default_section="\0none",
                                       delimiters=("=",))
    parser.optionxform = str  # type: ignore[assignment,method-assign]  # see _option_names
    try:
        with path.open(encoding="utf-8") as handle:
            parser.read_file(handle)
    except configparser.Error as exc:
        errors = getattr(exc, "errors", None)
        if isinstance(exc, configparser.ParsingError) and errors:
            raise ConfigError(f"{path}: malformed config at line {errors[0][0]}: expected "
                              f"'name = value' (only '=' separates them)") from None
        first = str(exc).splitlines()[0]
        raise ConfigError(f"{path}: malformed config: {first}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError.not_utf8(path, exc) from None
    return parser


def _option_names(section: str, items: dict[str, str], path: Path) -> dict[str, str]:
    """Option names are case-insensitive, except the keys of free sections (aggregate names)."""
    if section in FREE_SECTIONS:
        return items
    lowered: dict[str, str] = {}
    for name, value in items.items():
        if name.lower() in lowered:
            raise ConfigError(f"{path}: malformed config: option {name.lower()!r} in section "
                              f"{section!r} already exists")
        lowered[name.lower()] = value
    return lowered


def config_from_sections(sections: dict[str, dict[str, str]],
                         path: Path | None = None) -> Config:
    """Validate raw section -> {option: text} values against OPTIONS."""
    where = f"{path}: " if path else ""
    known_sections = {o.section for o in OPTIONS} | FREE_SECTIONS
    values: dict[tuple[str, str], Any] = {}
    free: dict[str, dict[str, str]] = {}
    for section, items in sections.items():
        if section in FREE_SECTIONS:
            free[section] = dict(items)
            _validate_free(section, items, where)
            continue
        if section not in known_sections:
            raise ConfigError(f"{where}unknown section [{section}] (known: "
                              f"{', '.join(sorted(known_sections))})")
        for name, raw in items.items():
            option = _INDEX.get((section, name))
            if option is None:
                names = sorted(o.name for o in OPTIONS if o.section == section)
                raise ConfigError(f"{where}unknown option {name!r} in [{section}] "
                                  f"(known: {', '.join(names)})")
            try:
                values[(section, name)] = _parse(option, raw)
            except ConfigError as exc:
                raise ConfigError(f"{where}{exc}") from None
    _check_budget_objective(values, where)
    _check_cold_migration(values, where)
    return Config(values=values, path=path, sections=free)


def _check_cold_migration(values: dict[tuple[str, str], Any], where: str) -> None:
    """The planner and the executor agree: no move is planned that only a cold migration
    could make, since the executor live-migrates only."""
    if values.get(("planner", "allow_cold_migration")):
        raise ConfigError(f"{where}[planner] allow_cold_migration = true: consolidator moves "
                          f"instances by live migration only, so it would plan moves of "
                          f"SHUTOFF instances that it then skips: set it to false")


def _check_budget_objective(values: dict[tuple[str, str], Any], where: str) -> None:
    """A migration budget ranks plans by hosts freed: refuse it beside the energy objective,
    which would exceed it (every daemon cycle) rather than keep it."""
    most = values.get(("planner", "max_migrations"))
    if values.get(("planner", "objective")) == "energy" and most is not None:
        raise ConfigError(f"{where}[planner] max_migrations = {most} does not apply with "
                          f"[planner] objective = energy: leave max_migrations empty or set "
                          f"objective = hosts")


def _free_checker(section: str) -> Any:
    """The check of one key and value of a free section: raises ValueError."""
    if section == "padding":
        from consolidator.core.padding import parse_window
        return parse_window
    if section == "cpu_speed":
        from consolidator.core.cpu_speed import parse_speed
        return parse_speed
    from consolidator.core.zones import check_zone_key, parse_zone_spec

    def check_zone(key: str, value: str) -> None:
        check_zone_key(key)
        parse_zone_spec(value)
    return check_zone


def _validate_free(section: str, items: dict[str, str], where: str) -> None:
    check = _free_checker(section)
    for key, value in items.items():
        try:
            check(key, value)
        except ValueError as exc:
            raise ConfigError(f"{where}[{section}] {key} = {value!r}: {exc}"
                              f"{comment_hint(value)}") from None


def declared_options(section: str | None = None) -> Iterable[Option]:
    """Every declared option, optionally of one section."""
    return [o for o in OPTIONS if section is None or o.section == section]

