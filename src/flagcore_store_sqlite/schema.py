"""The SQLite schema, as versioned migrations applied when a store opens.

Rule bodies (parameters, constraints, variants) are JSON in Unleash's wire format, written
and read by `flagcore.codec`; everything that is looked up or joined on is a column.
Append a migration to change the schema; never edit one that has shipped.
"""

from __future__ import annotations

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

__all__ = ["migrations"]

migrations = Migrations("flagcore")


@migrations()
def m001_initial(db: Database) -> None:
    _run(
        db,
        """
        CREATE TABLE projects (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            description TEXT,
            created_at TEXT NOT NULL
        );
        CREATE TABLE environments (
            name TEXT PRIMARY KEY,
            type TEXT NOT NULL,
            sort_order INTEGER NOT NULL,
            enabled INTEGER NOT NULL
        );
        CREATE TABLE flags (
            name TEXT PRIMARY KEY,
            project TEXT NOT NULL,
            type TEXT NOT NULL,
            description TEXT,
            stale INTEGER NOT NULL,
            impression_data INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            archived_at TEXT,
            dependencies TEXT NOT NULL
        );
        CREATE INDEX flags_project ON flags(project);
        CREATE TABLE flag_environments (
            flag TEXT NOT NULL REFERENCES flags(name) ON DELETE CASCADE,
            environment TEXT NOT NULL REFERENCES environments(name),
            enabled INTEGER NOT NULL,
            variants TEXT NOT NULL,
            PRIMARY KEY (flag, environment)
        );
        CREATE INDEX flag_environments_environment ON flag_environments(environment);
        CREATE TABLE segments (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL UNIQUE,
            description TEXT,
            project TEXT,
            constraints TEXT NOT NULL
        );
        CREATE TABLE strategies (
            id TEXT PRIMARY KEY,
            flag TEXT NOT NULL REFERENCES flags(name) ON DELETE CASCADE,
            environment TEXT NOT NULL REFERENCES environments(name),
            name TEXT NOT NULL,
            parameters TEXT NOT NULL,
            constraints TEXT NOT NULL,
            variants TEXT NOT NULL,
            disabled INTEGER NOT NULL,
            title TEXT,
            sort_order INTEGER NOT NULL
        );
        CREATE INDEX strategies_flag ON strategies(flag, environment, sort_order);
        CREATE INDEX strategies_environment ON strategies(environment);
        CREATE TABLE strategy_segments (
            strategy_id TEXT NOT NULL REFERENCES strategies(id) ON DELETE CASCADE,
            segment_id INTEGER NOT NULL REFERENCES segments(id),
            position INTEGER NOT NULL,
            PRIMARY KEY (strategy_id, segment_id)
        );
        CREATE INDEX strategy_segments_segment ON strategy_segments(segment_id);
        CREATE TABLE strategy_definitions (
            name TEXT PRIMARY KEY,
            body TEXT NOT NULL
        );
        CREATE TABLE tag_types (
            name TEXT PRIMARY KEY,
            description TEXT
        );
        CREATE TABLE flag_tags (
            flag TEXT NOT NULL REFERENCES flags(name) ON DELETE CASCADE,
            tag_type TEXT NOT NULL REFERENCES tag_types(name) ON DELETE CASCADE,
            value TEXT NOT NULL,
            PRIMARY KEY (flag, tag_type, value)
        );
        CREATE TABLE api_tokens (
            secret_hash TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            type TEXT NOT NULL,
            secret_hint TEXT NOT NULL,
            projects TEXT NOT NULL,
            environment TEXT,
            created_at TEXT NOT NULL
        );
        CREATE TABLE signal_endpoints (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL UNIQUE,
            description TEXT,
            enabled INTEGER NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE signal_endpoint_tokens (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            endpoint_id INTEGER NOT NULL REFERENCES signal_endpoints(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            secret_hash TEXT NOT NULL UNIQUE,
            created_at TEXT NOT NULL
        );
        CREATE TABLE signals (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            endpoint_id INTEGER NOT NULL REFERENCES signal_endpoints(id) ON DELETE CASCADE,
            token_id INTEGER,
            payload TEXT,
            created_at TEXT NOT NULL
        );
        CREATE INDEX signals_endpoint ON signals(endpoint_id, id);
        CREATE TABLE events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            type TEXT NOT NULL,
            created_by TEXT NOT NULL,
            created_at TEXT NOT NULL,
            feature_name TEXT,
            project TEXT,
            environment TEXT,
            data TEXT,
            pre_data TEXT
        );
        CREATE INDEX events_feature ON events(feature_name, id);
        CREATE TABLE flag_metrics (
            flag TEXT NOT NULL,
            app_name TEXT NOT NULL,
            environment TEXT NOT NULL,
            hour TEXT NOT NULL,
            yes INTEGER NOT NULL,
            no INTEGER NOT NULL,
            variants TEXT NOT NULL,
            PRIMARY KEY (flag, app_name, environment, hour)
        );
        CREATE TABLE client_instances (
            app_name TEXT NOT NULL,
            instance_id TEXT NOT NULL,
            environment TEXT,
            sdk_version TEXT,
            strategies TEXT NOT NULL,
            started TEXT,
            interval INTEGER,
            last_seen TEXT NOT NULL,
            PRIMARY KEY (app_name, instance_id)
        );
        """,
    )


@migrations()
def m002_action_sets(db: Database) -> None:
    _run(
        db,
        """
        CREATE TABLE action_sets (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            name TEXT NOT NULL,
            project TEXT NOT NULL,
            source INTEGER NOT NULL REFERENCES signal_endpoints(id) ON DELETE CASCADE,
            body TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX action_sets_source ON action_sets(source);
        CREATE TABLE action_executions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            action_set_id INTEGER NOT NULL REFERENCES action_sets(id) ON DELETE CASCADE,
            signal_id INTEGER NOT NULL,
            ok INTEGER NOT NULL,
            outcomes TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX action_executions_set ON action_executions(action_set_id, id);
        """,
    )


@migrations()
def m003_strategies_in_snapshot_order(db: Database) -> None:
    # A client snapshot reads one environment's strategies in (flag, order) order: with
    # this index SQLite walks them in that order instead of sorting 20,000 rows of JSON.
    _run(
        db,
        """
        CREATE INDEX strategies_snapshot_order
            ON strategies(environment, flag, sort_order, id);
        DROP INDEX strategies_environment;
        """,
    )


@migrations()
def m006_metrics_buckets_and_retention(db: Database) -> None:
    # Retention deletes the oldest rows of each kind in small batches: these indexes let
    # each batch find its rows without scanning tables that traffic keeps growing.
    _run(
        db,
        """
        CREATE INDEX flag_metrics_hour ON flag_metrics(hour);
        CREATE INDEX client_instances_last_seen ON client_instances(last_seen);
        CREATE INDEX signals_created_at ON signals(created_at);
        CREATE INDEX events_created_at ON events(created_at);
        """,
    )


def _run(db: Database, script: str) -> None:
    # executescript() would commit the migration's transaction; run statement by statement.
    for statement in script.split(";"):
        if statement.strip():
            db.execute(statement)
