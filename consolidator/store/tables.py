"""SQLAlchemy Core tables: snapshots, plans, the executor's journal and leases."""

from __future__ import annotations

from datetime import datetime, timezone

from sqlalchemy import (
    JSON,
    Column,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
)
from sqlalchemy.dialects import mysql
from sqlalchemy.engine import Dialect

#: A timestamp column's type in the migrations: on MariaDB and MySQL a DATETIME with
#: microseconds (their DATETIME holds no zone and whole seconds by default).
TIMESTAMP = DateTime(timezone=True).with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")


class UTCDateTime(TypeDecorator[datetime]):
    """A timestamp stored as UTC and always read back timezone-aware (on MariaDB and MySQL,
    a zone-less DATETIME(6) holding UTC)."""

    impl = TIMESTAMP
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(timezone.utc)
        return value.replace(tzinfo=None) if dialect.name in ("mysql", "mariadb") else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


metadata = MetaData(naming_convention={
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
})

ID = String(36)

snapshots = Table(
    "snapshots", metadata,
    Column("id", ID, primary_key=True),
    Column("cloud", String(255), nullable=False, index=True),
    Column("taken_at", UTCDateTime(), nullable=False, index=True),
    Column("source", String(1024), nullable=False),
    Column("capacity_source", String(32), nullable=False),
    Column("host_count", Integer, nullable=False),
    Column("instance_count", Integer, nullable=False),
    # where it was read: the cloud's identity (connection.cloud_identity); NULL for a
    # scenario file and for snapshots older than revision 0006
    Column("endpoint", String(1024)),
)


def _cascade(target: str) -> ForeignKey:
    """A foreign key whose rows go with the row they name."""
    return ForeignKey(target, ondelete="CASCADE")


snapshot_hosts = Table(
    "snapshot_hosts", metadata,
    Column("snapshot_id", ID, _cascade("snapshots.id"), primary_key=True),
    Column("name", String(255), primary_key=True),
    Column("position", Integer, nullable=False),
    Column("host_id", String(255), nullable=False),
    Column("compute_host", String(255), nullable=False),
    Column("vcpus", Integer, nullable=False),
    Column("memory_mb", Integer, nullable=False),
    Column("disk_gb", Integer, nullable=False),
    Column("cpu_allocation_ratio", Float, nullable=False),
    Column("ram_allocation_ratio", Float, nullable=False),
    Column("disk_allocation_ratio", Float, nullable=False),
    Column("reserved_vcpus", Integer, nullable=False),
    Column("reserved_memory_mb", Integer, nullable=False),
    Column("reserved_disk_gb", Integer, nullable=False),
    Column("availability_zone", String(255), nullable=False),
    Column("status", String(16), nullable=False),
    Column("state", String(16), nullable=False),
    Column("power", String(16), nullable=False),
    Column("disabled_reason", Text),
    Column("bmc", JSON),
    Column("aggregates", JSON),
    Column("resources", JSON),
    Column("traits", JSON),
    Column("cpu_speed", Float),
)

snapshot_instances = Table(
    "snapshot_instances", metadata,
    Column("snapshot_id", ID, _cascade("snapshots.id"), primary_key=True),
    Column("instance_id", String(255), primary_key=True),
    Column("position", Integer, nullable=False),
    Column("name", String(255), nullable=False),
    Column("host", String(255), nullable=False),
    Column("vcpus", Integer, nullable=False),
    Column("memory_mb", Integer, nullable=False),
    Column("disk_gb", Integer, nullable=False),
    Column("status", String(32), nullable=False),
    Column("instance_metadata", JSON, nullable=False),
    Column("project_id", String(255), nullable=False),
    Column("flavor", String(255), nullable=False),
    Column("flavor_extra_specs", JSON, nullable=False),
    Column("usage", JSON),
    Column("resources", JSON),
)

snapshot_server_groups = Table(
    "snapshot_server_groups", metadata,
    Column("snapshot_id", ID, _cascade("snapshots.id"), primary_key=True),
    Column("group_id", String(255), primary_key=True),
    Column("position", Integer, nullable=False),
    Column("name", String(255), nullable=False),
    Column("policy", String(32), nullable=False),
    Column("members", JSON, nullable=False),
)

snapshot_power = Table(
    "snapshot_power", metadata,
    Column("snapshot_id", ID, _cascade("snapshots.id"), primary_key=True),
    Column("host", String(255), primary_key=True),
    Column("watts", Float, nullable=False),
    Column("load", Float, nullable=False),
    Column("source", String(16), nullable=False),
)

plans = Table(
    "plans", metadata,
    Column("id", ID, primary_key=True),
    Column("cloud", String(255), nullable=False, index=True),
    Column("snapshot_id", ID, ForeignKey("snapshots.id"), nullable=False),
    Column("algorithm", String(64), nullable=False),
    Column("ranking", String(64)),
    Column("status", String(16), nullable=False, index=True),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
    Column("hosts_before", Integer, nullable=False),
    Column("hosts_after", Integer, nullable=False),
    Column("lower_bound", Integer, nullable=False),
    Column("migrations_lower_bound", Integer, nullable=False),
    Column("spare", Integer, nullable=False),
    Column("reason", Text),
    Column("details", JSON, nullable=False),
)

plan_migrations = Table(
    "plan_migrations", metadata,
    Column("plan_id", ID, _cascade("plans.id"), primary_key=True),
    Column("instance_id", String(255), primary_key=True),
    Column("position", Integer, nullable=False),
    Column("instance_name", String(255), nullable=False),
    Column("source", String(255), nullable=False),
    Column("destination", String(255), nullable=False),
    Column("wave", Integer, nullable=False),
)

plan_power_actions = Table(
    "plan_power_actions", metadata,
    Column("plan_id", ID, _cascade("plans.id"), primary_key=True),
    Column("host", String(255), primary_key=True),
    Column("action", String(16), primary_key=True),
    Column("position", Integer, nullable=False),
)

journal = Table(
    "journal", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("cloud", String(255), nullable=False, index=True),
    Column("plan_id", ID, ForeignKey("plans.id"), index=True),
    Column("action", String(32), nullable=False),
    Column("target", String(255), nullable=False),
    Column("params", JSON, nullable=False),
    Column("state", String(16), nullable=False),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("started_at", UTCDateTime()),
    Column("finished_at", UTCDateTime()),
    Column("result", Text),
    Column("lease_holder", String(255)),       # who wrote it, under which lease generation
    Column("lease_generation", Integer),       # (rows written before a destructive call)
    Column("operator", String(255)),           # user@host of the command that wrote it
    Column("cloud_key", String(255), index=True),   # the cloud's identity (revision 0012)
)

leases = Table(
    "leases", metadata,
    Column("name", String(255), primary_key=True),
    Column("holder", String(255), nullable=False),
    Column("acquired_at", UTCDateTime(), nullable=False),
    Column("expires_at", UTCDateTime(), nullable=False),
    Column("generation", Integer, nullable=False, server_default="1"),
)

# The one recorded state of each host consolidator acts on (core/host_gate.py STATES), and
# every change of it (revision 0009).
host_states = Table(
    "host_states", metadata,
    Column("cloud", String(255), primary_key=True),
    Column("host", String(255), primary_key=True),
    Column("state", String(32), nullable=False),
    Column("since", UTCDateTime(), nullable=False),
    Column("plan_id", ID),
    Column("actor", String(32), nullable=False),
    Column("why", Text),
)

host_state_changes = Table(
    "host_state_changes", metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("cloud", String(255), nullable=False, index=True),
    Column("host", String(255), nullable=False),
    Column("before", String(32)),
    Column("after", String(32), nullable=False),
    Column("at", UTCDateTime(), nullable=False),
    Column("plan_id", ID),
    Column("actor", String(32), nullable=False),
    Column("why", Text),
    Column("operator", String(255)),
)

metric_totals = Table(
    "metric_totals", metadata,
    Column("name", String(64), primary_key=True),      # the series, without consolidator_
    Column("labels", String(255), primary_key=True),   # 'k=v,k=v', sorted ('' for none)
    Column("value", Float, nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
)

# Work asked through the API and carried out by the daemon holding the lease (revision 0011).
jobs = Table(
    "jobs", metadata,
    Column("id", ID, primary_key=True),
    Column("cloud", String(255), nullable=False, index=True),
    Column("kind", String(32), nullable=False),
    Column("target", String(255), nullable=False),    # the plan, snapshot or host it is on
    Column("params", JSON, nullable=False),
    Column("state", String(16), nullable=False, index=True),
    Column("created_at", UTCDateTime(), nullable=False),
    Column("updated_at", UTCDateTime(), nullable=False),
    Column("started_at", UTCDateTime()),
    Column("finished_at", UTCDateTime()),
    Column("requester", JSON, nullable=False),        # who asked: core/actor.py Actor
    Column("claimed_by", String(255)),                # the daemon's lease holder
    Column("progress", Text),
    Column("result", JSON),
    Column("error", Text),
)
