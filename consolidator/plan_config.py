"""From the config to the planner: rules, settings and per-algorithm options."""

from __future__ import annotations

from typing import Any

from consolidator.config import Config
from consolidator.constraints import Rules, read_name_list
from consolidator.model import Cluster
from consolidator.planner import PlanSettings
from consolidator.zones import zones_for_cluster


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


def settings_from_config(config: Config) -> PlanSettings:
    """Rules plus the per-host limit and idle watts."""
    return PlanSettings(rules=rules_from_config(config),
                        per_host_limit=config.get("planner", "max_migrations_per_host"),
                        idle_watts=config.get("planner", "idle_watts"))


def algorithm_options(config: Config, algorithm: str, cluster: Cluster,
                      extra: dict[str, Any]) -> dict[str, Any]:
    """Options for an algorithm: what the config says for it, then the command line's."""
    options: dict[str, Any] = {}
    if algorithm == "zoned-bestfit":
        options["zones"] = zones_for_cluster(cluster, config.section("zones"))
    options.update(extra)
    return options
