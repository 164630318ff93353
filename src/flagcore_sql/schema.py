"""The schema of flagcore's SQL stores, as named migrations written once for every dialect.

Each `Migration` is applied once, in order, when a store opens; the adapter records the
names it applied (SQLite: sqlite-utils ``Migrations`` in ``_sqlite_migrations``, so the
names ``m001_initial`` … ``m006_metrics_buckets_and_retention`` shipped by
``flagcore_store_sqlite`` keep being recognised). Append a migration to change the
schema; never change what a shipped one does.

Rule bodies (parameters, constraints, variants) are JSON text in Unleash's wire format,
written and read by `flagcore.wire`; everything looked up or joined on is a column.
Statements are written with ``{serial}``, ``{bigint}`` and ``{bool}`` for the types that
differ (`Dialect.ddl`); for SQLite they spell exactly the tables shipped before. Data
steps (m004, m005) run through the `SqlSession` in Python, not in a dialect's JSON
functions: on a new database they find nothing to convert.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
from collections.abc import Callable
from typing import Any

import attrs

from flagcore_sql.dialect import Dialect
from flagcore_sql.session import SqlSession

__all__ = ["MIGRATIONS", "Migration"]


@attrs.frozen
class Migration:
    """One schema step: ``apply`` runs its statements through a session in a transaction."""

    name: str
    apply: Callable[[SqlSession, Dialect], None]


def _script(session: SqlSession, dialect: Dialect, script: str) -> None:
    # One statement at a time: a driver's script runner may commit the migration's
    # transaction (sqlite3's executescript does).
    for statement in dialect.ddl(script).split(";"):
        if statement.strip():
            session.run(statement)


_M001_INITIAL = """
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
            enabled {bool} NOT NULL
        );
        CREATE TABLE flags (
            name TEXT PRIMARY KEY,
            project TEXT NOT NULL,
            type TEXT NOT NULL,
            description TEXT,
            stale {bool} NOT NULL,
            impression_data {bool} NOT NULL,
            created_at TEXT NOT NULL,
            archived_at TEXT,
            dependencies TEXT NOT NULL
        );
        CREATE INDEX flags_project ON flags(project);
        CREATE TABLE flag_environments (
            flag TEXT NOT NULL REFERENCES flags(name) ON DELETE CASCADE,
            environment TEXT NOT NULL REFERENCES environments(name),
            enabled {bool} NOT NULL,
            variants TEXT NOT NULL,
            PRIMARY KEY (flag, environment)
        );
        CREATE INDEX flag_environments_environment ON flag_environments(environment);
        CREATE TABLE segments (
            id {serial},
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
            disabled {bool} NOT NULL,
            title TEXT,
            sort_order INTEGER NOT NULL
        );
        CREATE INDEX strategies_flag ON strategies(flag, environment, sort_order);
        CREATE INDEX strategies_environment ON strategies(environment);
        CREATE TABLE strategy_segments (
            strategy_id TEXT NOT NULL REFERENCES strategies(id) ON DELETE CASCADE,
            segment_id {bigint} NOT NULL REFERENCES segments(id),
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
            id {serial},
            name TEXT NOT NULL UNIQUE,
            description TEXT,
            enabled {bool} NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE signal_endpoint_tokens (
            id {serial},
            endpoint_id {bigint} NOT NULL REFERENCES signal_endpoints(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            secret_hash TEXT NOT NULL UNIQUE,
            created_at TEXT NOT NULL
        );
        CREATE TABLE signals (
            id {serial},
            endpoint_id {bigint} NOT NULL REFERENCES signal_endpoints(id) ON DELETE CASCADE,
            token_id {bigint},
            payload TEXT,
            created_at TEXT NOT NULL
        );
        CREATE INDEX signals_endpoint ON signals(endpoint_id, id);
        CREATE TABLE events (
            id {serial},
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
            yes {bigint} NOT NULL,
            no {bigint} NOT NULL,
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
        """


def m001_initial(session: SqlSession, dialect: Dialect) -> None:
    _script(session, dialect, _M001_INITIAL)


_M002_ACTION_SETS = """
        CREATE TABLE action_sets (
            id {serial},
            name TEXT NOT NULL,
            project TEXT NOT NULL,
            source {bigint} NOT NULL REFERENCES signal_endpoints(id) ON DELETE CASCADE,
            body TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX action_sets_source ON action_sets(source);
        CREATE TABLE action_executions (
            id {serial},
            action_set_id {bigint} NOT NULL REFERENCES action_sets(id) ON DELETE CASCADE,
            signal_id {bigint} NOT NULL,
            ok {bool} NOT NULL,
            outcomes TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX action_executions_set ON action_executions(action_set_id, id);
        """


def m002_action_sets(session: SqlSession, dialect: Dialect) -> None:
    _script(session, dialect, _M002_ACTION_SETS)


def m003_strategies_in_snapshot_order(session: SqlSession, dialect: Dialect) -> None:
    # A client snapshot reads one environment's strategies in (flag, order) order: with
    # this index the database walks them in that order instead of sorting 20,000 rows.
    _script(
        session,
        dialect,
        """
        CREATE INDEX strategies_snapshot_order
            ON strategies(environment, flag, sort_order, id);
        DROP INDEX strategies_environment;
        """,
    )


_M004_ACTION_SET_EVENTS = """
        CREATE TABLE action_set_events (
            id {serial},
            action_set_id {bigint} NOT NULL REFERENCES action_sets(id) ON DELETE CASCADE,
            signal_id {bigint} NOT NULL,
            state TEXT NOT NULL,
            body TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE UNIQUE INDEX action_set_events_once ON action_set_events(action_set_id, signal_id);
        CREATE INDEX action_set_events_set ON action_set_events(action_set_id, id);
        """


def m004_unleash_action_sets(session: SqlSession, dialect: Dialect) -> None:
    """Action sets in Unleash's terms; their runs become action set events, once per signal.

    Actions are renamed (``ENABLE_FLAG`` → ``TOGGLE_FEATURE_ON``, ``DISABLE_FLAG`` →
    ``TOGGLE_FEATURE_OFF``, ``MARK_STALE`` → ``MARK_FEATURE_STALE``) and numbered in their
    order; a filter's ``payload.a.b`` becomes the payload path ``a.b``. A set whose filters
    cannot be said that way (two on one path, or one that did not read the payload) is
    kept but disabled, with the filters it lost written into its description.
    """
    q = dialect.sql
    for row in session.rows("SELECT id, body FROM action_sets"):
        session.run(
            q("UPDATE action_sets SET body = ? WHERE id = ?"),
            [json.dumps(_unleash_action_set_body(json.loads(row[1]))), row[0]],
        )
    _script(session, dialect, _M004_ACTION_SET_EVENTS)
    columns = "e.id, e.action_set_id, e.signal_id, e.ok, e.outcomes, e.created_at"
    old_runs = session.rows(
        f"SELECT {columns}, a.name, a.project, a.source, a.body, a.created_at, "
        "s.endpoint_id, s.token_id, s.payload, s.created_at "
        "FROM action_executions e JOIN action_sets a ON a.id = e.action_set_id "
        "LEFT JOIN signals s ON s.id = e.signal_id ORDER BY e.id"
    )
    for run in old_runs:
        (run_id, set_id, signal_id, ok, outcomes, created_at) = tuple(run)[:6]
        (name, project, source, set_body, set_created) = tuple(run)[6:11]
        (endpoint_id, token_id, payload, signal_created) = tuple(run)[11:]
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
        session.run(
            q(
                "INSERT INTO action_set_events "
                "(id, action_set_id, signal_id, state, body, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING"
            ),
            [
                run_id,
                set_id,
                signal_id,
                "success" if ok else "failed",
                json.dumps({"actionSet": action_set, "signal": signal, "outcomes": converted}),
                created_at,
            ],
        )
    _script(session, dialect, "DROP TABLE action_executions")


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


def m005_segment_created(session: SqlSession, dialect: Dialect) -> None:
    """Unleash shows when and by whom a segment was created. Segments made before this
    migration take both from their first "segment-created" event when the log still has
    it, else the time of the migration and no author."""
    _script(
        session,
        dialect,
        """
        ALTER TABLE segments ADD COLUMN created_at TEXT;
        ALTER TABLE segments ADD COLUMN created_by TEXT;
        """,
    )
    logged: dict[Any, tuple[str, str | None]] = {}
    for created_at, created_by, data in session.rows(
        "SELECT created_at, created_by, data FROM events WHERE type = 'segment-created' ORDER BY id"
    ):
        segment_id = _json_member(data, "id")
        # As SQL compares a JSON number with an integer id: 1 and 1.0 match, "1" does not.
        if isinstance(segment_id, int | float):
            logged.setdefault(segment_id, (created_at, created_by))
    now = dt.datetime.now(dt.UTC).isoformat()
    for (segment_id,) in session.rows("SELECT id FROM segments"):
        created_at, created_by = logged.get(segment_id, (now, None))
        session.run(
            dialect.sql("UPDATE segments SET created_at = ?, created_by = ? WHERE id = ?"),
            [created_at, created_by, segment_id],
        )


def _json_member(text: str | None, key: str) -> Any:
    try:
        value = json.loads(text) if text is not None else None
    except ValueError:
        return None
    return value.get(key) if isinstance(value, dict) else None


def m006_metrics_buckets_and_retention(session: SqlSession, dialect: Dialect) -> None:
    # Retention deletes the oldest rows of each kind in small batches: these indexes let
    # each batch find its rows without scanning tables that traffic keeps growing.
    _script(
        session,
        dialect,
        """
        CREATE INDEX flag_metrics_hour ON flag_metrics(hour);
        CREATE INDEX client_instances_last_seen ON client_instances(last_seen);
        CREATE INDEX signals_created_at ON signals(created_at);
        CREATE INDEX events_created_at ON events(created_at);
        """,
    )


def m007_api_token_ids(session: SqlSession, dialect: Dialect) -> None:
    """Tokens get an id (a lost token can be deleted by it), and stored hints show at most
    2 characters of a secret, and none of a short one.

    Hints stored before showed up to 4 characters, a quarter of the secret part at most:
    4 shown means a secret part of 16 or more, which keeps 2; fewer means a short one,
    which keeps none. Ids are random: nothing about the secret can be read from them.
    """
    _script(session, dialect, "ALTER TABLE api_tokens ADD COLUMN id TEXT")
    for secret_hash, hint in session.rows("SELECT secret_hash, secret_hint FROM api_tokens"):
        session.run(
            dialect.sql("UPDATE api_tokens SET id = ?, secret_hint = ? WHERE secret_hash = ?"),
            [secrets.token_hex(8), _m007_hint(hint), secret_hash],
        )


def _m007_hint(hint: str) -> str:
    scope, dot, shown = hint.removesuffix("…").rpartition(".")
    if not dot:
        return hint
    return f"{scope}.{shown[:2] if len(shown) >= 4 else ''}…"


def m008_users_and_sessions(session: SqlSession, dialect: Dialect) -> None:
    """People (issue 28): users, their password hashes kept apart, server-side sessions
    and single-use links, both kept by the digest of their secret. Emails and usernames
    are unique whatever their case (the service says so first, with a 409)."""
    _script(
        session,
        dialect,
        """
        CREATE TABLE users (
            id {serial},
            root_role TEXT NOT NULL,
            name TEXT,
            email TEXT,
            username TEXT,
            disabled {bool} NOT NULL,
            created_at TEXT NOT NULL,
            seen_at TEXT
        );
        CREATE UNIQUE INDEX users_email ON users (lower(email));
        CREATE UNIQUE INDEX users_username ON users (lower(username));
        CREATE TABLE user_passwords (
            user_id {bigint} PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
            hash TEXT NOT NULL,
            changed_at TEXT NOT NULL
        );
        CREATE TABLE user_sessions (
            id_digest TEXT PRIMARY KEY,
            user_id {bigint} REFERENCES users(id) ON DELETE CASCADE,
            token_id TEXT,
            created_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            last_seen_at TEXT NOT NULL
        );
        CREATE INDEX user_sessions_user ON user_sessions(user_id);
        CREATE TABLE user_reset_links (
            token_digest TEXT PRIMARY KEY,
            user_id {bigint} NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            kind TEXT NOT NULL,
            created_by TEXT NOT NULL,
            created_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            used_at TEXT
        );
        """,
    )


def m009_personal_tokens(session: SqlSession, dialect: Dialect) -> None:
    """Personal access tokens and service accounts (issue 28): a token acting as its
    owner, kept by the digest of its secret; a service account is a user marked so."""
    _script(
        session,
        dialect,
        """
        ALTER TABLE users ADD COLUMN service_account {bool} NOT NULL DEFAULT FALSE;
        CREATE TABLE personal_tokens (
            id {serial},
            user_id {bigint} NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            description TEXT NOT NULL,
            secret_digest TEXT NOT NULL UNIQUE,
            created_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            seen_at TEXT
        );
        CREATE INDEX personal_tokens_user ON personal_tokens(user_id);
        """,
    )


def m010_user_identities(session: SqlSession, dialect: Dialect) -> None:
    """Accounts at an OpenID provider linked to users (issue 28, OpenID Connect): a later
    sign-in finds its user by issuer and subject, whatever the email has become."""
    _script(
        session,
        dialect,
        """
        CREATE TABLE user_identities (
            issuer TEXT NOT NULL,
            subject TEXT NOT NULL,
            user_id {bigint} NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            created_at TEXT NOT NULL,
            PRIMARY KEY (issuer, subject)
        );
        CREATE INDEX user_identities_user ON user_identities(user_id);
        """,
    )


def m011_roles(session: SqlSession, dialect: Dialect) -> None:
    """Custom roles and project access (issue 28). A role's grants are one JSON list; an
    assignment goes with its project or its user. Roles 1 to 5 are code, not rows, so
    ``role_id`` has no foreign key: the service refuses to delete a role in use."""
    _script(
        session,
        dialect,
        """
        CREATE TABLE roles (
            id {bigint} PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            type TEXT NOT NULL,
            description TEXT NOT NULL,
            grants TEXT NOT NULL
        );
        CREATE TABLE role_assignments (
            project TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
            user_id {bigint} NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            role_id {bigint} NOT NULL,
            PRIMARY KEY (project, user_id, role_id)
        );
        CREATE INDEX role_assignments_user ON role_assignments(user_id);
        """,
    )


def m012_context_fields(session: SqlSession, dialect: Dialect) -> None:
    """The context-field registry (issue 29): each field kept whole as a JSON body, as
    strategy definitions are; built-in fields have a row only once someone edits them."""
    _script(
        session,
        dialect,
        """
        CREATE TABLE context_fields (
            name TEXT PRIMARY KEY,
            body TEXT NOT NULL
        );
        """,
    )


def m013_change_requests(session: SqlSession, dialect: Dialect) -> None:
    """Change requests (issue 30): the settings per project and environment, and the
    requests, whose changes, reviews and comments are JSON lists inside their row (a
    request is always read and written whole, in one transaction)."""
    _script(
        session,
        dialect,
        """
        CREATE TABLE change_request_settings (
            project TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
            environment TEXT NOT NULL,
            enabled {bool} NOT NULL,
            required_approvals {bigint} NOT NULL,
            PRIMARY KEY (project, environment)
        );
        CREATE TABLE change_requests (
            id {serial},
            project TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
            environment TEXT NOT NULL,
            title TEXT NOT NULL,
            state TEXT NOT NULL,
            created_by TEXT NOT NULL,
            created_by_id {bigint},
            created_at TEXT NOT NULL,
            min_approvals {bigint} NOT NULL,
            changes TEXT NOT NULL,
            approvals TEXT NOT NULL,
            rejections TEXT NOT NULL,
            comments TEXT NOT NULL,
            reviewers TEXT NOT NULL,
            scheduled_at TEXT,
            schedule_failure TEXT,
            updated_at TEXT,
            scheduled_by TEXT
        );
        CREATE INDEX change_requests_project ON change_requests(project, state);
        """,
    )


def m014_integrations(session: SqlSession, dialect: Dialect) -> None:
    """Integrations out (issue 31): Unleash's addons, each one's cursor over the event log
    with the lease of the node sending for it, and the delivery log."""
    _script(
        session,
        dialect,
        """
        CREATE TABLE integrations (
            id {serial},
            provider TEXT NOT NULL,
            enabled {bool} NOT NULL,
            description TEXT,
            parameters TEXT NOT NULL,
            events TEXT NOT NULL,
            projects TEXT NOT NULL,
            environments TEXT NOT NULL,
            signing_secret TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE integration_cursors (
            integration_id {bigint} PRIMARY KEY REFERENCES integrations(id) ON DELETE CASCADE,
            event_id {bigint} NOT NULL,
            holder TEXT,
            lease_until TEXT
        );
        CREATE TABLE integration_deliveries (
            id {serial},
            integration_id {bigint} NOT NULL REFERENCES integrations(id) ON DELETE CASCADE,
            event_id {bigint} NOT NULL,
            event_type TEXT NOT NULL,
            state TEXT NOT NULL,
            attempts {bigint} NOT NULL,
            status_code {bigint},
            detail TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE INDEX integration_deliveries_integration
            ON integration_deliveries(integration_id, id);
        """,
    )


def m016_context_samples(session: SqlSession, dialect: Dialect) -> None:
    """The preview's context samples (issue 30): per environment, the traffic reservoir's
    slots and the uploaded lines, each a context as canonical JSON text. Retention deletes
    the oldest traffic rows by ``seen_at``."""
    _script(
        session,
        dialect,
        """
        CREATE TABLE context_samples (
            environment TEXT NOT NULL,
            source TEXT NOT NULL,
            slot {bigint} NOT NULL,
            context TEXT NOT NULL,
            seen_at TEXT NOT NULL,
            PRIMARY KEY (environment, source, slot)
        );
        CREATE INDEX context_samples_seen ON context_samples(source, seen_at);
        """,
    )


def m015_custom_root_roles(session: SqlSession, dialect: Dialect) -> None:
    """A user or service account may hold a custom root role (issue 28): its id, or null
    for the predefined root role the ``root_role`` column names."""
    _script(session, dialect, "ALTER TABLE users ADD COLUMN custom_root_role {bigint};")


def m019_code_scans(session: SqlSession, dialect: Dialect) -> None:
    """Code references (issue 32): each source's last scan kept whole as a JSON body."""
    _script(
        session,
        dialect,
        """
        CREATE TABLE code_scans (
            source TEXT PRIMARY KEY,
            body TEXT NOT NULL
        );
        """,
    )


def m020_lifecycle(session: SqlSession, dialect: Dialect) -> None:
    """Lifecycle stages (issue 32): when a flag was first seen by SDKs in a
    non-production and a production environment, and marked completed; and the flag
    types' expected lifetimes people changed (the others keep Unleash's defaults)."""
    _script(
        session,
        dialect,
        """
        CREATE TABLE flag_stages (
            flag TEXT NOT NULL REFERENCES flags(name) ON DELETE CASCADE,
            stage TEXT NOT NULL,
            entered_at TEXT NOT NULL,
            status TEXT,
            status_value TEXT,
            PRIMARY KEY (flag, stage)
        );
        CREATE TABLE feature_type_lifetimes (
            id TEXT PRIMARY KEY,
            lifetime_days {bigint}
        );
        """,
    )


def m022_daily_metrics(session: SqlSession, dialect: Dialect) -> None:
    """Usage history (issue 32): hour buckets past their retention are rolled up into
    day buckets (``hour`` is the day's midnight, UTC), kept a year by default; the index
    on ``hour`` lets retention find the oldest days, the primary key a flag's series."""
    _script(
        session,
        dialect,
        """
        CREATE TABLE flag_metrics_daily (
            flag TEXT NOT NULL,
            app_name TEXT NOT NULL,
            environment TEXT NOT NULL,
            hour TEXT NOT NULL,
            yes {bigint} NOT NULL,
            no {bigint} NOT NULL,
            variants TEXT NOT NULL,
            PRIMARY KEY (flag, app_name, environment, hour)
        );
        CREATE INDEX flag_metrics_daily_hour ON flag_metrics_daily(hour);
        """,
    )


def m023_release_plans(session: SqlSession, dialect: Dialect) -> None:
    """Release plans (issue 32): templates kept whole as JSON bodies; plans with their
    milestones and safeguards as JSON inside the row, going with their flag, and the time
    the worker next looks at each (``next_move_at``, indexed); impact metrics' series and
    their points per minute."""
    _script(
        session,
        dialect,
        """
        CREATE TABLE release_plan_templates (
            id TEXT PRIMARY KEY,
            body TEXT NOT NULL
        );
        CREATE TABLE release_plans (
            id TEXT PRIMARY KEY,
            template_id TEXT NOT NULL,
            name TEXT NOT NULL,
            description TEXT,
            project TEXT NOT NULL,
            flag TEXT NOT NULL REFERENCES flags(name) ON DELETE CASCADE,
            environment TEXT NOT NULL,
            milestones TEXT NOT NULL,
            created_at TEXT NOT NULL,
            created_by_user_id {bigint} NOT NULL,
            active_milestone_id TEXT,
            placed_strategy_ids TEXT NOT NULL,
            safeguards TEXT NOT NULL,
            paused_reason TEXT,
            next_move_at TEXT
        );
        CREATE INDEX release_plans_flag ON release_plans(flag, environment);
        CREATE INDEX release_plans_next_move ON release_plans(next_move_at);
        CREATE TABLE impact_series (
            environment TEXT NOT NULL,
            flag TEXT NOT NULL REFERENCES flags(name) ON DELETE CASCADE,
            name TEXT NOT NULL,
            kind TEXT NOT NULL,
            first_seen TEXT NOT NULL,
            PRIMARY KEY (environment, flag, name)
        );
        CREATE TABLE impact_points (
            environment TEXT NOT NULL,
            flag TEXT NOT NULL REFERENCES flags(name) ON DELETE CASCADE,
            name TEXT NOT NULL,
            minute TEXT NOT NULL,
            value DOUBLE PRECISION NOT NULL,
            count {bigint} NOT NULL,
            buckets TEXT NOT NULL,
            PRIMARY KEY (environment, flag, name, minute)
        );
        CREATE INDEX impact_points_minute ON impact_points(environment, minute);
        """,
    )


def m024_upkeep_due(session: SqlSession, dialect: Dialect) -> None:
    """When each recurring upkeep job is next due (issue 32: the daily reminder of
    potentially stale flags), moved on by the node that does it, in the same unit."""
    _script(
        session,
        dialect,
        """
        CREATE TABLE upkeep_due (
            name TEXT PRIMARY KEY,
            due_at TEXT NOT NULL
        );
        """,
    )


def m025_groups(session: SqlSession, dialect: Dialect) -> None:
    """Groups (issue 28, Unleash's user groups): a group's provider mappings are one JSON
    list; members and project roles go with their group, a member with their user, a
    project role with its project. ``root_role`` and ``role_id`` name roles 1 to 5 too,
    which are code, not rows: no foreign key (the service refuses to delete a role in
    use). A session started at an OpenID provider keeps its ID token for the sign-out
    there (RP-initiated logout)."""
    _script(
        session,
        dialect,
        """
        CREATE TABLE user_groups (
            id {serial},
            name TEXT NOT NULL UNIQUE,
            description TEXT,
            mappings_sso TEXT NOT NULL,
            root_role {bigint},
            created_at TEXT NOT NULL,
            created_by TEXT
        );
        CREATE TABLE group_members (
            group_id {bigint} NOT NULL REFERENCES user_groups(id) ON DELETE CASCADE,
            user_id {bigint} NOT NULL REFERENCES users(id) ON DELETE CASCADE,
            joined_at TEXT NOT NULL,
            created_by TEXT NOT NULL,
            via_provider {bool} NOT NULL,
            PRIMARY KEY (group_id, user_id)
        );
        CREATE INDEX group_members_user ON group_members(user_id);
        CREATE TABLE group_role_assignments (
            project TEXT NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
            group_id {bigint} NOT NULL REFERENCES user_groups(id) ON DELETE CASCADE,
            role_id {bigint} NOT NULL,
            PRIMARY KEY (project, group_id, role_id)
        );
        CREATE INDEX group_role_assignments_group ON group_role_assignments(group_id);
        ALTER TABLE user_sessions ADD COLUMN id_token TEXT;
        """,
    )


MIGRATIONS: tuple[Migration, ...] = tuple(
    Migration(step.__name__, step)
    for step in (
        m001_initial,
        m002_action_sets,
        m003_strategies_in_snapshot_order,
        m004_unleash_action_sets,
        m005_segment_created,
        m006_metrics_buckets_and_retention,
        m007_api_token_ids,
        m008_users_and_sessions,
        m009_personal_tokens,
        m010_user_identities,
        m011_roles,
        m012_context_fields,
        m013_change_requests,
        m014_integrations,
        m015_custom_root_roles,
        m016_context_samples,
        m019_code_scans,
        m020_lifecycle,
        m022_daily_metrics,
        m023_release_plans,
        m024_upkeep_due,
        m025_groups,
    )
)
