"""The SQLite schema, as versioned migrations applied when a store opens.

Rule bodies (parameters, constraints, variants) are JSON in Unleash's wire format, written
and read by `flagcore.codec`; everything that is looked up or joined on is a column.
Append a migration to change the schema; never edit one that has shipped.
"""

from __future__ import annotations

import json
from typing import Any

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
def m004_unleash_action_sets(db: Database) -> None:
    """Action sets in Unleash's terms; their runs become action set events, once per signal.

    Actions are renamed (``ENABLE_FLAG`` → ``TOGGLE_FEATURE_ON``, ``DISABLE_FLAG`` →
    ``TOGGLE_FEATURE_OFF``, ``MARK_STALE`` → ``MARK_FEATURE_STALE``) and numbered in their
    order; a filter's ``payload.a.b`` becomes the payload path ``a.b``. A set whose filters
    cannot be said that way (two on one path, or one that did not read the payload) is
    kept but disabled, with the filters it lost written into its description.
    """
    for row in list(db.execute("SELECT id, body FROM action_sets").fetchall()):
        db.execute(
            "UPDATE action_sets SET body = ? WHERE id = ?",
            [json.dumps(_unleash_action_set_body(json.loads(row[1]))), row[0]],
        )
    _run(
        db,
        """
        CREATE TABLE action_set_events (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            action_set_id INTEGER NOT NULL REFERENCES action_sets(id) ON DELETE CASCADE,
            signal_id INTEGER NOT NULL,
            state TEXT NOT NULL,
            body TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE UNIQUE INDEX action_set_events_once ON action_set_events(action_set_id, signal_id);
        CREATE INDEX action_set_events_set ON action_set_events(action_set_id, id);
        """,
    )
    columns = "e.id, e.action_set_id, e.signal_id, e.ok, e.outcomes, e.created_at"
    old_runs = db.execute(
        f"SELECT {columns}, a.name, a.project, a.source, a.body, a.created_at, "
        "s.endpoint_id, s.token_id, s.payload, s.created_at "
        "FROM action_executions e JOIN action_sets a ON a.id = e.action_set_id "
        "LEFT JOIN signals s ON s.id = e.signal_id ORDER BY e.id"
    ).fetchall()
    for run in old_runs:
        (run_id, set_id, signal_id, ok, outcomes, created_at) = run[:6]
        (name, project, source, set_body, set_created) = run[6:11]
        (endpoint_id, token_id, payload, signal_created) = run[11:]
        body = json.loads(set_body)
        action_set = {
            **body,
            "id": set_id,
            "name": name,
            "project": project,
            "source": source,
            "createdAt": set_created,
        }
        signal = {
            "id": signal_id,
            "endpointId": source if endpoint_id is None else endpoint_id,
            "tokenId": token_id,
            "payload": None if payload is None else json.loads(payload),
            "createdAt": created_at if signal_created is None else signal_created,
        }
        converted = [
            {
                "action": _unleash_action(outcome["action"], index),
                "state": "success" if outcome["ok"] else "failed",
                "details": outcome.get("error"),
            }
            for index, outcome in enumerate(json.loads(outcomes))
        ]
        converted.extend(
            {"action": action, "state": "not started", "details": None}
            for action in body["actions"][len(converted) :]
        )
        db.execute(
            "INSERT OR IGNORE INTO action_set_events "
            "(id, action_set_id, signal_id, state, body, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            [
                run_id,
                set_id,
                signal_id,
                "success" if ok else "failed",
                json.dumps({"actionSet": action_set, "signal": signal, "outcomes": converted}),
                created_at,
            ],
        )
    _run(db, "DROP TABLE action_executions")


_UNLEASH_ACTIONS = {
    "ENABLE_FLAG": "TOGGLE_FEATURE_ON",
    "DISABLE_FLAG": "TOGGLE_FEATURE_OFF",
    "MARK_STALE": "MARK_FEATURE_STALE",
}


def _unleash_action(action: dict[str, Any], index: int) -> dict[str, Any]:
    kind = action["kind"]
    return {
        "kind": _UNLEASH_ACTIONS.get(kind, kind),
        "flag": action["flag"],
        "environment": action.get("environment"),
        "sortOrder": index + 1,
    }


def _unleash_action_set_body(body: dict[str, Any]) -> dict[str, Any]:
    """m002's stored action set → m004's (see `m004_unleash_action_sets`)."""
    filters: list[dict[str, Any]] = []
    lost: list[dict[str, Any]] = []
    for constraint in body.get("filters", []):
        name = constraint.get("contextName", "")
        path = name.removeprefix("payload.")
        if name == path or not path or any(f["contextName"] == path for f in filters):
            lost.append(constraint)
        else:
            filters.append({**constraint, "contextName": path})
    description = body.get("description")
    if lost:
        note = f"[disabled when migrated: filters not kept: {json.dumps(lost)}]"
        description = f"{description} {note}" if description else note
    return {
        "actions": [_unleash_action(a, i) for i, a in enumerate(body.get("actions", []))],
        "filters": filters,
        "enabled": bool(body.get("enabled", True)) and not lost,
        "description": description,
        "actorId": None,
    }


@migrations()
def m005_segment_created(db: Database) -> None:
    # Unleash shows when and by whom a segment was created. Segments made before this
    # migration take both from their "segment-created" event when the log still has it,
    # else the time of the migration and no author.
    _run(
        db,
        """
        ALTER TABLE segments ADD COLUMN created_at TEXT;
        ALTER TABLE segments ADD COLUMN created_by TEXT;
        UPDATE segments SET
            created_at = COALESCE(
                (SELECT e.created_at FROM events e
                  WHERE e.type = 'segment-created' AND json_valid(e.data)
                    AND json_extract(e.data, '$.id') = segments.id
                  ORDER BY e.id LIMIT 1),
                strftime('%Y-%m-%dT%H:%M:%f+00:00', 'now')
            ),
            created_by = (SELECT e.created_by FROM events e
                  WHERE e.type = 'segment-created' AND json_valid(e.data)
                    AND json_extract(e.data, '$.id') = segments.id
                  ORDER BY e.id LIMIT 1)
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
