"""`SqliteStore`: flagcore's durable embedded store.

One connection (sqlite-utils `Database`), guarded by a lock, so the store can be shared by
threads; several processes may open the same file. Durability settings: WAL journal,
``synchronous=FULL`` (a committed transaction survives power loss, not only a crash),
foreign keys on, and a busy timeout plus retries so concurrent writers wait for each
other instead of failing. Write transactions start with ``BEGIN IMMEDIATE``, so two
writers never deadlock upgrading a read lock. No ``sqlite3`` error leaves this module:
each is translated into `flagcore.errors`.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs
import orjson
from sqlite_utils import Database

from flagcore.entities import (
    Action,
    ActionExecution,
    ActionKind,
    ActionOutcome,
    ActionSet,
    ActionState,
    ApiToken,
    ClientInstance,
    Environment,
    Event,
    FlagDefinition,
    FlagEnvironment,
    FlagMetrics,
    Project,
    SegmentDefinition,
    Signal,
    SignalEndpoint,
    SignalEndpointToken,
    StrategyDefinition,
    StrategyPlacement,
    Tag,
    TagType,
    TokenType,
)
from flagcore.errors import Conflict, StorageError
from flagcore.model import Constraint, Dependency, Segment, Strategy, Variant
from flagcore.wire import (
    converter,
    structure_constraints,
    structure_dependencies,
    structure_variants,
)
from tests.store.legacy_v006.schema import migrations

__all__ = ["SqliteStore"]

_BUSY_TIMEOUT_S = 10.0
_LOCK_RETRY_S = 60.0
_IN_CHUNK = 500  # values per IN (...) list: under SQLite's default limit of 32,766 parameters
_MAX_COUNT = 2**63 - 1  # SQLite's largest integer: sums of metric counts stop there


def _loads_list(text: str) -> Any:
    # Most flags have no dependencies and no flag-level variants: skip the parser for "[]".
    return [] if text == "[]" else orjson.loads(text)


def _where(conditions: dict[str, Any]) -> tuple[str, list[Any]]:
    """``{"flag = ?": value, ...}`` → a WHERE clause over the conditions whose value is set."""
    kept = {sql: value for sql, value in conditions.items() if value is not None}
    return " AND ".join(kept) or "1", list(kept.values())


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode("utf-8")


def _time(value: dt.datetime | None) -> str | None:
    return None if value is None else value.astimezone(dt.UTC).isoformat()


def _parse_time(value: str | None) -> dt.datetime | None:
    return None if value is None else dt.datetime.fromisoformat(value)


def _required_time(value: str) -> dt.datetime:
    return dt.datetime.fromisoformat(value)


def _action_json(action: Action) -> dict[str, Any]:
    return {
        "kind": action.kind.value,
        "flag": action.flag,
        "environment": action.environment,
        "sortOrder": action.sort_order,
    }


def _action_from(data: dict[str, Any]) -> Action:
    return Action(
        ActionKind(data["kind"]), data["flag"], data.get("environment"), data["sortOrder"]
    )


def _action_set_body(action_set: ActionSet) -> dict[str, Any]:
    """What the ``body`` column holds (m004); the rest of an action set has columns."""
    return {
        "actions": [_action_json(a) for a in action_set.actions],
        "filters": converter.unstructure(action_set.filters, tuple[Constraint, ...]),
        "enabled": action_set.enabled,
        "description": action_set.description,
        "actorId": action_set.actor_id,
    }


def _action_set_json(action_set: ActionSet) -> dict[str, Any]:
    """The whole action set, as a run's record keeps it."""
    return {
        **_action_set_body(action_set),
        "id": action_set.id,
        "name": action_set.name,
        "project": action_set.project,
        "source": action_set.source,
        "createdAt": _time(action_set.created_at),
    }


def _action_set_from(data: dict[str, Any]) -> ActionSet:
    return ActionSet(
        data["id"],
        data["name"],
        data["project"],
        data["source"],
        tuple(_action_from(a) for a in data["actions"]),
        structure_constraints(data["filters"]),
        data["enabled"],
        data["description"],
        _required_time(data["createdAt"]),
        data["actorId"],
    )


def _signal_json(signal: Signal) -> dict[str, Any]:
    return {
        "id": signal.id,
        "endpointId": signal.endpoint_id,
        "tokenId": signal.token_id,
        "payload": signal.payload,
        "createdAt": _time(signal.created_at),
    }


def _signal_from(data: dict[str, Any]) -> Signal:
    return Signal(
        data["id"],
        data["endpointId"],
        data["tokenId"],
        data["payload"],
        _required_time(data["createdAt"]),
    )


class SqliteStore:
    """Opens (creating or upgrading) the database at ``path``; ``":memory:"`` for a private one."""

    def __init__(self, path: str | Path = "flagcore.db") -> None:
        self.path = str(path)
        try:
            connection = sqlite3.connect(
                self.path, timeout=_BUSY_TIMEOUT_S, check_same_thread=False
            )
            self._db = Database(connection, execute_plugins=False)
            self._db.execute("PRAGMA foreign_keys = ON")
            if self.path != ":memory:":
                self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = FULL")
            self._db.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
            self._lock = threading.RLock()
            with self._lock:
                self._retry_locked(lambda: migrations.apply(self._db))
            # revision() has its own connection: in WAL mode a reader never waits for the
            # writer, so an event loop can ask for the revision without blocking on a write.
            self._revision_lock = threading.Lock()
            self._revision_conn = (
                connection
                if self.path == ":memory:"
                else sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, check_same_thread=False)
            )
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open the SQLite database {self.path!r}: {exc}") from exc

    def _retry_locked(self, action: Any) -> Any:
        """Run ``action``, retrying while another process holds the write lock."""
        deadline = time.monotonic() + _LOCK_RETRY_S
        delay = 0.005
        while True:
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if time.monotonic() > deadline:
                    raise StorageError(f"the database stayed locked: {exc}") from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.2)

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[SqliteTransaction]:
        conn = self._db.conn
        with self._lock:
            try:
                self._retry_locked(
                    lambda: conn.execute("BEGIN IMMEDIATE" if write else "BEGIN DEFERRED")
                )
            except sqlite3.Error as exc:
                raise StorageError(f"cannot start a transaction: {exc}") from exc
            try:
                yield SqliteTransaction(self._db)
            except BaseException:
                self._rollback()
                raise
            try:
                self._retry_locked(lambda: conn.execute("COMMIT"))
            except sqlite3.Error as exc:
                self._rollback()
                raise StorageError(f"the transaction could not be committed: {exc}") from exc

    def _rollback(self) -> None:
        try:
            if self._db.conn.in_transaction:
                self._db.conn.execute("ROLLBACK")
        except sqlite3.Error:  # pragma: no cover - the connection is gone; nothing was committed
            pass

    def revision(self) -> int:
        if self._revision_conn is self._db.conn:
            lock: Any = self._lock  # one private in-memory database: one connection
        else:
            lock = self._revision_lock
        with lock:
            try:
                row = self._revision_conn.execute("SELECT max(id) FROM events").fetchone()
            except sqlite3.Error as exc:
                raise StorageError(f"cannot read the revision: {exc}") from exc
        return int(row[0] or 0)

    def integrity_check(self) -> str:
        with self._lock:
            return str(self._db.execute("PRAGMA integrity_check").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            try:
                if self._revision_conn is not self._db.conn:
                    self._revision_conn.close()
                self._db.close()
            except sqlite3.Error as exc:  # pragma: no cover
                raise StorageError(f"cannot close the database: {exc}") from exc


class SqliteTransaction:
    """The `flagcore.ports.Transaction` of `SqliteStore`: SQL over one open transaction."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        try:
            cursor = self._db.execute(sql, list(params))
        except sqlite3.IntegrityError as exc:
            raise Conflict(f"the change conflicts with stored data: {exc}") from exc
        except sqlite3.Error as exc:
            raise StorageError(f"the database failed: {exc}") from exc
        cursor.row_factory = sqlite3.Row  # read by column name, in C; no dict per row
        return cursor.fetchall()

    def _run(self, sql: str, params: Sequence[Any] = ()) -> int | None:
        try:
            cursor = self._db.execute(sql, list(params))
        except sqlite3.IntegrityError as exc:
            raise Conflict(f"the change conflicts with stored data: {exc}") from exc
        except sqlite3.Error as exc:
            raise StorageError(f"the database failed: {exc}") from exc
        return cursor.lastrowid

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        rows = self._rows(sql, params)
        return rows[0] if rows else None

    # --- events ---
    def append_event(
        self,
        type: str,
        created_by: str,
        *,
        feature_name: str | None = None,
        project: str | None = None,
        environment: str | None = None,
        data: Any = None,
        pre_data: Any = None,
    ) -> Event:
        created_at = dt.datetime.now(dt.UTC)
        event_id = self._run(
            "INSERT INTO events (type, created_by, created_at, feature_name, project, "
            "environment, data, pre_data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                type,
                created_by,
                _time(created_at),
                feature_name,
                project,
                environment,
                None if data is None else _dumps(data),
                None if pre_data is None else _dumps(pre_data),
            ],
        )
        assert event_id is not None
        return Event(
            event_id,
            type,
            created_by,
            created_at,
            feature_name,
            project,
            environment,
            data,
            pre_data,
        )

    def list_events(
        self, *, limit: int = 100, before_id: int | None = None, feature_name: str | None = None
    ) -> Sequence[Event]:
        where_sql, params = _where({"id < ?": before_id, "feature_name = ?": feature_name})
        rows = self._rows(
            f"SELECT * FROM events WHERE {where_sql} ORDER BY id DESC LIMIT ?",
            [*params, limit],
        )
        return [
            Event(
                row["id"],
                row["type"],
                row["created_by"],
                _required_time(row["created_at"]),
                row["feature_name"],
                row["project"],
                row["environment"],
                None if row["data"] is None else orjson.loads(row["data"]),
                None if row["pre_data"] is None else orjson.loads(row["pre_data"]),
            )
            for row in rows
        ]

    # --- projects and environments ---
    @staticmethod
    def _project(row: Any) -> Project:
        return Project(
            row["id"], row["name"], row["description"], _required_time(row["created_at"])
        )

    def get_project(self, project_id: str) -> Project | None:
        row = self._one("SELECT * FROM projects WHERE id = ?", [project_id])
        return None if row is None else self._project(row)

    def list_projects(self) -> Sequence[Project]:
        return [self._project(row) for row in self._rows("SELECT * FROM projects ORDER BY id")]

    def save_project(self, project: Project) -> None:
        self._run(
            "INSERT INTO projects (id, name, description, created_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET name = excluded.name, "
            "description = excluded.description",
            [project.id, project.name, project.description, _time(project.created_at)],
        )

    def delete_project(self, project_id: str) -> None:
        self._run("DELETE FROM projects WHERE id = ?", [project_id])

    @staticmethod
    def _environment(row: Any) -> Environment:
        return Environment(row["name"], row["type"], row["sort_order"], bool(row["enabled"]))

    def get_environment(self, name: str) -> Environment | None:
        row = self._one("SELECT * FROM environments WHERE name = ?", [name])
        return None if row is None else self._environment(row)

    def list_environments(self) -> Sequence[Environment]:
        return [
            self._environment(row)
            for row in self._rows("SELECT * FROM environments ORDER BY sort_order, name")
        ]

    def save_environment(self, environment: Environment) -> None:
        self._run(
            "INSERT OR REPLACE INTO environments (name, type, sort_order, enabled) "
            "VALUES (?, ?, ?, ?)",
            [environment.name, environment.type, environment.sort_order, environment.enabled],
        )

    # --- flags ---
    @staticmethod
    def _flag(row: Any) -> FlagDefinition:
        return FlagDefinition(
            row["name"],
            row["project"],
            row["type"],
            row["description"],
            bool(row["stale"]),
            bool(row["impression_data"]),
            _required_time(row["created_at"]),
            _parse_time(row["archived_at"]),
            structure_dependencies(_loads_list(row["dependencies"])),
        )

    def get_flag(self, name: str) -> FlagDefinition | None:
        row = self._one("SELECT * FROM flags WHERE name = ?", [name])
        return None if row is None else self._flag(row)

    def list_flags(
        self, *, project: str | None = None, archived: bool | None = False
    ) -> Sequence[FlagDefinition]:
        archived_sql = {True: "archived_at IS NOT NULL", False: "archived_at IS NULL"}
        where_sql, params = _where({"project = ?": project})
        if archived is not None:
            where_sql += f" AND {archived_sql[archived]}"
        sql = f"SELECT * FROM flags WHERE {where_sql} ORDER BY created_at, name"
        return [self._flag(row) for row in self._rows(sql, params)]

    def save_flag(self, flag: FlagDefinition) -> None:
        self._run(
            "INSERT INTO flags (name, project, type, description, stale, impression_data, "
            "created_at, archived_at, dependencies) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(name) DO UPDATE SET project = excluded.project, type = excluded.type, "
            "description = excluded.description, stale = excluded.stale, "
            "impression_data = excluded.impression_data, archived_at = excluded.archived_at, "
            "dependencies = excluded.dependencies",
            [
                flag.name,
                flag.project,
                flag.type,
                flag.description,
                flag.stale,
                flag.impression_data,
                _time(flag.created_at),
                _time(flag.archived_at),
                _dumps(converter.unstructure(flag.dependencies, tuple[Dependency, ...])),
            ],
        )

    def delete_flag(self, name: str) -> None:
        self._run("DELETE FROM flags WHERE name = ?", [name])

    @staticmethod
    def _flag_environment(row: Any) -> FlagEnvironment:
        return FlagEnvironment(
            row["flag"],
            row["environment"],
            bool(row["enabled"]),
            structure_variants(_loads_list(row["variants"])),
        )

    def get_flag_environment(self, flag: str, environment: str) -> FlagEnvironment | None:
        row = self._one(
            "SELECT * FROM flag_environments WHERE flag = ? AND environment = ?",
            [flag, environment],
        )
        return None if row is None else self._flag_environment(row)

    def list_flag_environments(
        self, *, flag: str | None = None, environment: str | None = None
    ) -> Sequence[FlagEnvironment]:
        where_sql, params = _where({"flag = ?": flag, "environment = ?": environment})
        sql = f"SELECT * FROM flag_environments WHERE {where_sql} ORDER BY flag, environment"
        return [self._flag_environment(row) for row in self._rows(sql, params)]

    def save_flag_environment(self, state: FlagEnvironment) -> None:
        self._run(
            "INSERT OR REPLACE INTO flag_environments (flag, environment, enabled, variants) "
            "VALUES (?, ?, ?, ?)",
            [
                state.flag,
                state.environment,
                state.enabled,
                _dumps(converter.unstructure(state.variants, tuple[Variant, ...])),
            ],
        )

    # --- strategies ---
    def _placements(self, where: str, params: Sequence[Any]) -> list[StrategyPlacement]:
        rows = self._rows(
            "SELECT id, flag, environment, name, parameters, constraints, variants, disabled, "
            f"title, sort_order FROM strategies s WHERE {where} "
            "ORDER BY flag, environment, sort_order, id",
            params,
        )
        # One query for every segment reference, not one subquery per strategy.
        segment_rows = self._rows(
            "SELECT strategy_id, segment_id FROM strategy_segments WHERE strategy_id IN "
            f"(SELECT id FROM strategies s WHERE {where}) ORDER BY strategy_id, position",
            params,
        )
        segments: dict[str, list[int]] = {}
        for strategy_id, segment_id in segment_rows:
            segments.setdefault(strategy_id, []).append(segment_id)
        loads = orjson.loads
        return [
            StrategyPlacement(
                flag,
                environment,
                Strategy(
                    name,
                    loads(parameters),
                    structure_constraints(_loads_list(constraints)),
                    tuple(segments[strategy_id]) if strategy_id in segments else (),
                    structure_variants(_loads_list(variants)),
                    bool(disabled),
                    strategy_id,
                    title,
                    sort_order,
                ),
            )
            for (
                strategy_id,
                flag,
                environment,
                name,
                parameters,
                constraints,
                variants,
                disabled,
                title,
                sort_order,
            ) in rows
        ]

    def get_strategy(self, strategy_id: str) -> StrategyPlacement | None:
        found = self._placements("s.id = ?", [strategy_id])
        return found[0] if found else None

    def list_strategies(
        self, *, flag: str | None = None, environment: str | None = None
    ) -> Sequence[StrategyPlacement]:
        where_sql, params = _where({"s.flag = ?": flag, "s.environment = ?": environment})
        return self._placements(where_sql, params)

    def save_strategy(self, placement: StrategyPlacement) -> None:
        strategy = placement.strategy
        self._run(
            "INSERT INTO strategies (id, flag, environment, name, parameters, constraints, "
            "variants, disabled, title, sort_order) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET flag = excluded.flag, "
            "environment = excluded.environment, name = excluded.name, "
            "parameters = excluded.parameters, constraints = excluded.constraints, "
            "variants = excluded.variants, disabled = excluded.disabled, title = excluded.title, "
            "sort_order = excluded.sort_order",
            [
                placement.id,
                placement.flag,
                placement.environment,
                strategy.name,
                _dumps(dict(strategy.parameters)),
                _dumps(converter.unstructure(strategy.constraints, tuple[Constraint, ...])),
                _dumps(converter.unstructure(strategy.variants, tuple[Variant, ...])),
                strategy.disabled,
                strategy.title,
                strategy.sort_order or 0,
            ],
        )
        self._run("DELETE FROM strategy_segments WHERE strategy_id = ?", [placement.id])
        for position, segment_id in enumerate(strategy.segments):
            self._run(
                "INSERT INTO strategy_segments (strategy_id, segment_id, position) "
                "VALUES (?, ?, ?)",
                [placement.id, segment_id, position],
            )

    def delete_strategy(self, strategy_id: str) -> None:
        self._run("DELETE FROM strategies WHERE id = ?", [strategy_id])

    def strategies_using_segment(self, segment_id: int) -> Sequence[StrategyPlacement]:
        return self._placements(
            "s.id IN (SELECT strategy_id FROM strategy_segments WHERE segment_id = ?)", [segment_id]
        )

    # --- segments ---
    @staticmethod
    def _segment(row: Any) -> Segment:
        return Segment(
            row["id"],
            row["name"],
            structure_constraints(orjson.loads(row["constraints"])),
            row["description"],
            row["project"],
        )

    @classmethod
    def _segment_definition(cls, row: Any) -> SegmentDefinition:
        return SegmentDefinition(
            cls._segment(row), _required_time(row["created_at"]), row["created_by"]
        )

    def get_segment(self, segment_id: int) -> Segment | None:
        row = self._one("SELECT * FROM segments WHERE id = ?", [segment_id])
        return None if row is None else self._segment(row)

    def list_segments(self) -> Sequence[Segment]:
        return [self._segment(row) for row in self._rows("SELECT * FROM segments ORDER BY id")]

    def get_segment_definition(self, segment_id: int) -> SegmentDefinition | None:
        row = self._one("SELECT * FROM segments WHERE id = ?", [segment_id])
        return None if row is None else self._segment_definition(row)

    def list_segment_definitions(self) -> Sequence[SegmentDefinition]:
        rows = self._rows("SELECT * FROM segments ORDER BY id")
        return [self._segment_definition(row) for row in rows]

    def create_segment(
        self,
        segment: Segment,
        *,
        created_by: str | None = None,
        created_at: dt.datetime | None = None,
    ) -> Segment:
        segment_id = self._run(
            "INSERT INTO segments (name, description, project, constraints, created_at, "
            "created_by) VALUES (?, ?, ?, ?, ?, ?)",
            [
                segment.name,
                segment.description,
                segment.project,
                _dumps(converter.unstructure(segment.constraints, tuple[Constraint, ...])),
                _time(created_at or dt.datetime.now(dt.UTC)),
                created_by,
            ],
        )
        assert segment_id is not None
        return Segment(
            segment_id, segment.name, segment.constraints, segment.description, segment.project
        )

    def save_segment(self, segment: Segment) -> None:
        self._run(
            "UPDATE segments SET name = ?, description = ?, project = ?, constraints = ? "
            "WHERE id = ?",
            [
                segment.name,
                segment.description,
                segment.project,
                _dumps(converter.unstructure(segment.constraints, tuple[Constraint, ...])),
                segment.id,
            ],
        )

    def delete_segment(self, segment_id: int) -> None:
        self._run("DELETE FROM segments WHERE id = ?", [segment_id])

    # --- strategy definitions ---
    def get_strategy_definition(self, name: str) -> StrategyDefinition | None:
        row = self._one("SELECT body FROM strategy_definitions WHERE name = ?", [name])
        return (
            None
            if row is None
            else converter.structure(orjson.loads(row["body"]), StrategyDefinition)
        )

    def list_strategy_definitions(self) -> Sequence[StrategyDefinition]:
        return [
            converter.structure(orjson.loads(row["body"]), StrategyDefinition)
            for row in self._rows("SELECT body FROM strategy_definitions ORDER BY name")
        ]

    def save_strategy_definition(self, definition: StrategyDefinition) -> None:
        self._run(
            "INSERT OR REPLACE INTO strategy_definitions (name, body) VALUES (?, ?)",
            [definition.name, _dumps(converter.unstructure(definition))],
        )

    def delete_strategy_definition(self, name: str) -> None:
        self._run("DELETE FROM strategy_definitions WHERE name = ?", [name])

    # --- tags ---
    def get_tag_type(self, name: str) -> TagType | None:
        row = self._one("SELECT * FROM tag_types WHERE name = ?", [name])
        return None if row is None else TagType(row["name"], row["description"])

    def list_tag_types(self) -> Sequence[TagType]:
        return [
            TagType(row["name"], row["description"])
            for row in self._rows("SELECT * FROM tag_types ORDER BY name")
        ]

    def save_tag_type(self, tag_type: TagType) -> None:
        self._run(
            "INSERT INTO tag_types (name, description) VALUES (?, ?) "
            "ON CONFLICT(name) DO UPDATE SET description = excluded.description",
            [tag_type.name, tag_type.description],
        )

    def delete_tag_type(self, name: str) -> None:
        self._run("DELETE FROM tag_types WHERE name = ?", [name])

    def list_flag_tags(self, flag: str | None = None) -> Sequence[tuple[str, Tag]]:
        if flag is None:
            rows = self._rows("SELECT * FROM flag_tags ORDER BY flag, tag_type, value")
        else:
            rows = self._rows(
                "SELECT * FROM flag_tags WHERE flag = ? ORDER BY tag_type, value", [flag]
            )
        return [(row["flag"], Tag(row["tag_type"], row["value"])) for row in rows]

    def add_flag_tag(self, flag: str, tag: Tag) -> None:
        self._run(
            "INSERT OR IGNORE INTO flag_tags (flag, tag_type, value) VALUES (?, ?, ?)",
            [flag, tag.type, tag.value],
        )

    def remove_flag_tag(self, flag: str, tag: Tag) -> None:
        self._run(
            "DELETE FROM flag_tags WHERE flag = ? AND tag_type = ? AND value = ?",
            [flag, tag.type, tag.value],
        )

    # --- API tokens ---
    @staticmethod
    def _token(row: Any) -> ApiToken:
        return ApiToken(
            row["name"],
            TokenType(row["type"]),
            row["secret_hash"],
            row["secret_hint"],
            tuple(orjson.loads(row["projects"])),
            row["environment"],
            _required_time(row["created_at"]),
        )

    def get_token(self, secret_hash: str) -> ApiToken | None:
        row = self._one("SELECT * FROM api_tokens WHERE secret_hash = ?", [secret_hash])
        return None if row is None else self._token(row)

    def list_tokens(self) -> Sequence[ApiToken]:
        return [
            self._token(row) for row in self._rows("SELECT * FROM api_tokens ORDER BY created_at")
        ]

    def save_token(self, token: ApiToken) -> None:
        self._run(
            "INSERT OR REPLACE INTO api_tokens (secret_hash, name, type, secret_hint, projects, "
            "environment, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                token.secret_hash,
                token.name,
                token.type.value,
                token.secret_hint,
                _dumps(list(token.projects)),
                token.environment,
                _time(token.created_at),
            ],
        )

    def delete_token(self, secret_hash: str) -> None:
        self._run("DELETE FROM api_tokens WHERE secret_hash = ?", [secret_hash])

    # --- signals ---
    @staticmethod
    def _endpoint(row: Any) -> SignalEndpoint:
        return SignalEndpoint(
            row["id"],
            row["name"],
            row["description"],
            bool(row["enabled"]),
            _required_time(row["created_at"]),
        )

    def create_signal_endpoint(
        self, name: str, description: str | None, enabled: bool, created_at: dt.datetime
    ) -> SignalEndpoint:
        endpoint_id = self._run(
            "INSERT INTO signal_endpoints (name, description, enabled, created_at) "
            "VALUES (?, ?, ?, ?)",
            [name, description, enabled, _time(created_at)],
        )
        assert endpoint_id is not None
        return SignalEndpoint(endpoint_id, name, description, enabled, created_at)

    def get_signal_endpoint(self, endpoint_id: int) -> SignalEndpoint | None:
        row = self._one("SELECT * FROM signal_endpoints WHERE id = ?", [endpoint_id])
        return None if row is None else self._endpoint(row)

    def find_signal_endpoint(self, name: str) -> SignalEndpoint | None:
        row = self._one("SELECT * FROM signal_endpoints WHERE name = ?", [name])
        return None if row is None else self._endpoint(row)

    def list_signal_endpoints(self) -> Sequence[SignalEndpoint]:
        return [
            self._endpoint(row) for row in self._rows("SELECT * FROM signal_endpoints ORDER BY id")
        ]

    def save_signal_endpoint(self, endpoint: SignalEndpoint) -> None:
        self._run(
            "UPDATE signal_endpoints SET name = ?, description = ?, enabled = ? WHERE id = ?",
            [endpoint.name, endpoint.description, endpoint.enabled, endpoint.id],
        )

    def delete_signal_endpoint(self, endpoint_id: int) -> None:
        self._run("DELETE FROM signal_endpoints WHERE id = ?", [endpoint_id])

    def create_signal_endpoint_token(
        self, endpoint_id: int, name: str, secret_hash: str, created_at: dt.datetime
    ) -> SignalEndpointToken:
        token_id = self._run(
            "INSERT INTO signal_endpoint_tokens (endpoint_id, name, secret_hash, created_at) "
            "VALUES (?, ?, ?, ?)",
            [endpoint_id, name, secret_hash, _time(created_at)],
        )
        assert token_id is not None
        return SignalEndpointToken(token_id, endpoint_id, name, secret_hash, created_at)

    def list_signal_endpoint_tokens(self, endpoint_id: int) -> Sequence[SignalEndpointToken]:
        return [
            SignalEndpointToken(
                row["id"],
                row["endpoint_id"],
                row["name"],
                row["secret_hash"],
                _required_time(row["created_at"]),
            )
            for row in self._rows(
                "SELECT * FROM signal_endpoint_tokens WHERE endpoint_id = ? ORDER BY id",
                [endpoint_id],
            )
        ]

    def delete_signal_endpoint_token(self, token_id: int) -> None:
        self._run("DELETE FROM signal_endpoint_tokens WHERE id = ?", [token_id])

    def add_signal(
        self, endpoint_id: int, token_id: int | None, payload: Any, created_at: dt.datetime
    ) -> Signal:
        signal_id = self._run(
            "INSERT INTO signals (endpoint_id, token_id, payload, created_at) VALUES (?, ?, ?, ?)",
            [endpoint_id, token_id, _dumps(payload), _time(created_at)],
        )
        assert signal_id is not None
        return Signal(signal_id, endpoint_id, token_id, payload, created_at)

    def list_signals(
        self, *, endpoint_id: int | None = None, limit: int = 50, before_id: int | None = None
    ) -> Sequence[Signal]:
        where_sql, params = _where({"endpoint_id = ?": endpoint_id, "id < ?": before_id})
        rows = self._rows(
            f"SELECT * FROM signals WHERE {where_sql} ORDER BY id DESC LIMIT ?",
            [*params, limit],
        )
        return [
            Signal(
                row["id"],
                row["endpoint_id"],
                row["token_id"],
                orjson.loads(row["payload"]),
                _required_time(row["created_at"]),
            )
            for row in rows
        ]

    # --- action sets ---
    @staticmethod
    def _action_set(row: Any) -> ActionSet:
        return _action_set_from(
            {
                **orjson.loads(row["body"]),
                "id": row["id"],
                "name": row["name"],
                "project": row["project"],
                "source": row["source"],
                "createdAt": row["created_at"],
            }
        )

    def create_action_set(self, action_set: ActionSet) -> ActionSet:
        action_set_id = self._run(
            "INSERT INTO action_sets (name, project, source, body, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                action_set.name,
                action_set.project,
                action_set.source,
                _dumps(_action_set_body(action_set)),
                _time(action_set.created_at),
            ],
        )
        assert action_set_id is not None
        return attrs.evolve(action_set, id=action_set_id)

    def get_action_set(self, action_set_id: int) -> ActionSet | None:
        row = self._one("SELECT * FROM action_sets WHERE id = ?", [action_set_id])
        return None if row is None else self._action_set(row)

    def list_action_sets(
        self, *, project: str | None = None, source: int | None = None
    ) -> Sequence[ActionSet]:
        where_sql, params = _where({"project = ?": project, "source = ?": source})
        sql = f"SELECT * FROM action_sets WHERE {where_sql} ORDER BY id"
        return [self._action_set(row) for row in self._rows(sql, params)]

    def save_action_set(self, action_set: ActionSet) -> None:
        self._run(
            "UPDATE action_sets SET name = ?, project = ?, source = ?, body = ? WHERE id = ?",
            [
                action_set.name,
                action_set.project,
                action_set.source,
                _dumps(_action_set_body(action_set)),
                action_set.id,
            ],
        )

    def delete_action_set(self, action_set_id: int) -> None:
        self._run("DELETE FROM action_sets WHERE id = ?", [action_set_id])

    def add_action_execution(self, execution: ActionExecution) -> ActionExecution:
        body = {
            "actionSet": _action_set_json(execution.action_set),
            "signal": _signal_json(execution.signal),
            "outcomes": [
                {"action": _action_json(o.action), "state": o.state.value, "details": o.details}
                for o in execution.outcomes
            ],
        }
        # The unique index on (action_set_id, signal_id) makes a second run a Conflict.
        execution_id = self._run(
            "INSERT INTO action_set_events (action_set_id, signal_id, state, body, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                execution.action_set_id,
                execution.signal_id,
                execution.state.value,
                _dumps(body),
                _time(execution.created_at),
            ],
        )
        assert execution_id is not None
        return attrs.evolve(execution, id=execution_id)

    def list_action_executions(
        self, *, action_set_id: int | None = None, limit: int = 50, offset: int = 0
    ) -> Sequence[ActionExecution]:
        where_sql, params = _where({"action_set_id = ?": action_set_id})
        rows = self._rows(
            f"SELECT * FROM action_set_events WHERE {where_sql} ORDER BY id DESC LIMIT ? OFFSET ?",
            [*params, limit, offset],
        )
        executions = []
        for row in rows:
            body = orjson.loads(row["body"])
            executions.append(
                ActionExecution(
                    row["id"],
                    _action_set_from(body["actionSet"]),
                    _signal_from(body["signal"]),
                    ActionState(row["state"]),
                    tuple(
                        ActionOutcome(
                            _action_from(o["action"]), ActionState(o["state"]), o["details"]
                        )
                        for o in body["outcomes"]
                    ),
                    _required_time(row["created_at"]),
                )
            )
        return executions

    # --- metrics and instances ---
    def add_flag_metrics(self, rows: Iterable[FlagMetrics]) -> None:
        for row in rows:
            key = [row.flag, row.app_name, row.environment, _time(row.hour)]
            current = self._one(
                "SELECT variants FROM flag_metrics WHERE flag = ? AND app_name = ? "
                "AND environment = ? AND hour = ?",
                key,
            )
            variants = dict(row.variants)
            if current is not None:
                for name, count in orjson.loads(current["variants"]).items():
                    variants[name] = min(variants.get(name, 0) + count, _MAX_COUNT)
            self._run(
                "INSERT INTO flag_metrics (flag, app_name, environment, hour, yes, no, variants) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(flag, app_name, environment, hour) "
                "DO UPDATE SET yes = min(yes + excluded.yes, 9223372036854775807), "
                "no = min(no + excluded.no, 9223372036854775807), "
                "variants = excluded.variants",
                [*key, row.yes, row.no, _dumps(variants)],
            )

    def list_flag_metrics(self, flag: str) -> Sequence[FlagMetrics]:
        return [
            FlagMetrics(
                row["flag"],
                row["app_name"],
                row["environment"],
                _required_time(row["hour"]),
                row["yes"],
                row["no"],
                orjson.loads(row["variants"]),
            )
            for row in self._rows(
                "SELECT * FROM flag_metrics WHERE flag = ? ORDER BY hour, app_name, environment",
                [flag],
            )
        ]

    def flag_projects(self, names: Collection[str]) -> Mapping[str, str]:
        found: dict[str, str] = {}
        wanted = list(names)
        for start in range(0, len(wanted), _IN_CHUNK):
            chunk = wanted[start : start + _IN_CHUNK]
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT name, project FROM flags WHERE name IN ({marks})"
            for row in self._rows(sql, chunk):
                found[row["name"]] = row["project"]
        return found

    def save_client_instance(self, instance: ClientInstance) -> None:
        self._run(
            "INSERT INTO client_instances (app_name, instance_id, environment, sdk_version, "
            "strategies, started, interval, last_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(app_name, instance_id) DO UPDATE SET "
            "environment = coalesce(excluded.environment, environment), "
            "sdk_version = coalesce(excluded.sdk_version, sdk_version), "
            "strategies = CASE WHEN excluded.strategies = '[]' THEN strategies "
            "ELSE excluded.strategies END, "
            "started = coalesce(excluded.started, started), "
            "interval = coalesce(excluded.interval, interval), last_seen = excluded.last_seen",
            [
                instance.app_name,
                instance.instance_id,
                instance.environment,
                instance.sdk_version,
                _dumps(list(instance.strategies)),
                _time(instance.started),
                instance.interval,
                _time(instance.last_seen),
            ],
        )

    def list_client_instances(self) -> Sequence[ClientInstance]:
        return [
            ClientInstance(
                row["app_name"],
                row["instance_id"],
                row["environment"],
                row["sdk_version"],
                tuple(orjson.loads(row["strategies"])),
                _parse_time(row["started"]),
                row["interval"],
                _required_time(row["last_seen"]),
            )
            for row in self._rows("SELECT * FROM client_instances ORDER BY app_name, instance_id")
        ]

    # --- retention ---
    def _delete_oldest(self, table: str, where: str, order: str, params: list[Any]) -> int:
        """Delete the first rows of ``table`` (by ``order``) matching ``where``; the last
        parameter is the LIMIT. Uses the indexes of migration m006, so a batch is cheap."""
        try:
            cursor = self._db.execute(
                f"DELETE FROM {table} WHERE rowid IN "
                f"(SELECT rowid FROM {table} WHERE {where} ORDER BY {order} LIMIT ?)",
                params,
            )
        except sqlite3.Error as exc:
            raise StorageError(f"the database failed: {exc}") from exc
        return int(cursor.rowcount)

    def delete_flag_metrics_before(self, hour: dt.datetime, limit: int) -> int:
        return self._delete_oldest("flag_metrics", "hour < ?", "hour", [_time(hour), limit])

    def delete_client_instances_seen_before(self, time: dt.datetime, limit: int) -> int:
        return self._delete_oldest(
            "client_instances", "last_seen < ?", "last_seen", [_time(time), limit]
        )

    def delete_signals_before(self, time: dt.datetime, limit: int) -> int:
        return self._delete_oldest("signals", "created_at < ?", "id", [_time(time), limit])

    def delete_signals_beyond_newest(self, endpoint_id: int, keep: int, limit: int) -> int:
        return self._delete_oldest(
            "signals",
            "endpoint_id = ? AND id < coalesce((SELECT id FROM signals WHERE endpoint_id = ? "
            "ORDER BY id DESC LIMIT 1 OFFSET ?), -1)",
            "id",
            [endpoint_id, endpoint_id, max(0, keep - 1), limit],
        )

    def delete_events_before(self, time: dt.datetime, limit: int) -> int:
        return self._delete_oldest(
            "events",
            "created_at < ? AND id < (SELECT max(id) FROM events)",
            "id",
            [_time(time), limit],
        )
