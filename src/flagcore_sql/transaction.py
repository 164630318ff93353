"""`SqlTransaction`: every query of the port, written once for SQLite and PostgreSQL.

Reads are shaped for client snapshots: one environment is read in a handful of queries
(flags, their state there, their strategies, all the strategies' segment references,
the segments), never a query per flag or per strategy, and rule JSON is parsed with
orjson and read by the codec's fast readers. Row ↔ model mapping is in
`flagcore_sql.mapping`; what differs between databases is in `flagcore_sql.dialect`.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import attrs
import orjson

from flagcore.codec import (
    converter,
    structure_constraints,
    structure_variants,
)
from flagcore.entities import (
    ActionExecution,
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
)
from flagcore.model import Constraint, Dependency, Segment, Strategy, Variant
from flagcore_sql import mapping as m
from flagcore_sql.dialect import Dialect
from flagcore_sql.session import Row, SqlSession

__all__ = ["SqlTransaction"]

IN_CHUNK = 500
"""Values per ``IN (...)`` list: under SQLite's 32,766 parameters and PostgreSQL's 65,535."""


class SqlTransaction:
    """`flagcore.ports.Transaction` in SQL, over the transaction an adapter has open.

    Every statement goes through ``session`` (the adapter's driver, with its errors
    translated) after `Dialect.sql`; ids the database allocates come back by
    ``RETURNING id``.
    """

    def __init__(self, session: SqlSession, dialect: Dialect) -> None:
        self._session = session
        self._dialect = dialect
        self._sql = dialect.sql

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return self._session.rows(self._sql(sql), params)

    def _run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._session.run(self._sql(sql), params)

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        rows = self._rows(sql, params)
        return rows[0] if rows else None

    def _insert(self, sql: str, params: Sequence[Any]) -> int:
        """Run an ``INSERT`` and return the id the database gave the row."""
        return int(self._rows(f"{sql} RETURNING id", params)[0][0])

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
        event_id = self._insert(
            "INSERT INTO events (type, created_by, created_at, feature_name, project, "
            "environment, data, pre_data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                type,
                created_by,
                m.time_text(created_at),
                feature_name,
                project,
                environment,
                None if data is None else m.dumps(data),
                None if pre_data is None else m.dumps(pre_data),
            ],
        )
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
        where_sql, params = m.where({"id < ?": before_id, "feature_name = ?": feature_name})
        rows = self._rows(
            f"SELECT * FROM events WHERE {where_sql} ORDER BY id DESC LIMIT ?",
            [*params, limit],
        )
        return [
            Event(
                row["id"],
                row["type"],
                row["created_by"],
                m.required_time(row["created_at"]),
                row["feature_name"],
                row["project"],
                row["environment"],
                None if row["data"] is None else orjson.loads(row["data"]),
                None if row["pre_data"] is None else orjson.loads(row["pre_data"]),
            )
            for row in rows
        ]

    # --- projects and environments ---
    def get_project(self, project_id: str) -> Project | None:
        row = self._one("SELECT * FROM projects WHERE id = ?", [project_id])
        return None if row is None else m.project_from_row(row)

    def list_projects(self) -> Sequence[Project]:
        return [m.project_from_row(row) for row in self._rows("SELECT * FROM projects ORDER BY id")]

    def save_project(self, project: Project) -> None:
        self._run(
            "INSERT INTO projects (id, name, description, created_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET name = excluded.name, "
            "description = excluded.description",
            [project.id, project.name, project.description, m.time_text(project.created_at)],
        )

    def delete_project(self, project_id: str) -> None:
        self._run("DELETE FROM projects WHERE id = ?", [project_id])

    def get_environment(self, name: str) -> Environment | None:
        row = self._one("SELECT * FROM environments WHERE name = ?", [name])
        return None if row is None else m.environment_from_row(row)

    def list_environments(self) -> Sequence[Environment]:
        return [
            m.environment_from_row(row)
            for row in self._rows("SELECT * FROM environments ORDER BY sort_order, name")
        ]

    def save_environment(self, environment: Environment) -> None:
        self._run(
            "INSERT INTO environments (name, type, sort_order, enabled) VALUES (?, ?, ?, ?) "
            "ON CONFLICT(name) DO UPDATE SET type = excluded.type, "
            "sort_order = excluded.sort_order, enabled = excluded.enabled",
            [environment.name, environment.type, environment.sort_order, environment.enabled],
        )

    # --- flags ---
    def get_flag(self, name: str) -> FlagDefinition | None:
        row = self._one("SELECT * FROM flags WHERE name = ?", [name])
        return None if row is None else m.flag_from_row(row)

    def list_flags(
        self, *, project: str | None = None, archived: bool | None = False
    ) -> Sequence[FlagDefinition]:
        archived_sql = {True: "archived_at IS NOT NULL", False: "archived_at IS NULL"}
        where_sql, params = m.where({"project = ?": project})
        if archived is not None:
            where_sql += f" AND {archived_sql[archived]}"
        sql = f"SELECT * FROM flags WHERE {where_sql} ORDER BY created_at, name"
        return [m.flag_from_row(row) for row in self._rows(sql, params)]

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
                m.time_text(flag.created_at),
                m.time_text(flag.archived_at),
                m.dumps(converter.unstructure(flag.dependencies, tuple[Dependency, ...])),
            ],
        )

    def delete_flag(self, name: str) -> None:
        self._run("DELETE FROM flags WHERE name = ?", [name])

    def get_flag_environment(self, flag: str, environment: str) -> FlagEnvironment | None:
        row = self._one(
            "SELECT * FROM flag_environments WHERE flag = ? AND environment = ?",
            [flag, environment],
        )
        return None if row is None else m.flag_environment_from_row(row)

    def list_flag_environments(
        self, *, flag: str | None = None, environment: str | None = None
    ) -> Sequence[FlagEnvironment]:
        where_sql, params = m.where({"flag = ?": flag, "environment = ?": environment})
        sql = f"SELECT * FROM flag_environments WHERE {where_sql} ORDER BY flag, environment"
        return [m.flag_environment_from_row(row) for row in self._rows(sql, params)]

    def save_flag_environment(self, state: FlagEnvironment) -> None:
        self._run(
            "INSERT INTO flag_environments (flag, environment, enabled, variants) "
            "VALUES (?, ?, ?, ?) ON CONFLICT(flag, environment) DO UPDATE SET "
            "enabled = excluded.enabled, variants = excluded.variants",
            [
                state.flag,
                state.environment,
                state.enabled,
                m.dumps(converter.unstructure(state.variants, tuple[Variant, ...])),
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
                    structure_constraints(m.loads_list(constraints)),
                    tuple(segments[strategy_id]) if strategy_id in segments else (),
                    structure_variants(m.loads_list(variants)),
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
        where_sql, params = m.where({"s.flag = ?": flag, "s.environment = ?": environment})
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
                m.dumps(dict(strategy.parameters)),
                m.dumps(converter.unstructure(strategy.constraints, tuple[Constraint, ...])),
                m.dumps(converter.unstructure(strategy.variants, tuple[Variant, ...])),
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
    def get_segment(self, segment_id: int) -> Segment | None:
        row = self._one("SELECT * FROM segments WHERE id = ?", [segment_id])
        return None if row is None else m.segment_from_row(row)

    def list_segments(self) -> Sequence[Segment]:
        return [m.segment_from_row(row) for row in self._rows("SELECT * FROM segments ORDER BY id")]

    def get_segment_definition(self, segment_id: int) -> SegmentDefinition | None:
        row = self._one("SELECT * FROM segments WHERE id = ?", [segment_id])
        return None if row is None else m.segment_definition_from_row(row)

    def list_segment_definitions(self) -> Sequence[SegmentDefinition]:
        rows = self._rows("SELECT * FROM segments ORDER BY id")
        return [m.segment_definition_from_row(row) for row in rows]

    def create_segment(
        self,
        segment: Segment,
        *,
        created_by: str | None = None,
        created_at: dt.datetime | None = None,
    ) -> Segment:
        segment_id = self._insert(
            "INSERT INTO segments (name, description, project, constraints, created_at, "
            "created_by) VALUES (?, ?, ?, ?, ?, ?)",
            [
                segment.name,
                segment.description,
                segment.project,
                m.dumps(converter.unstructure(segment.constraints, tuple[Constraint, ...])),
                m.time_text(created_at or dt.datetime.now(dt.UTC)),
                created_by,
            ],
        )
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
                m.dumps(converter.unstructure(segment.constraints, tuple[Constraint, ...])),
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
            "INSERT INTO strategy_definitions (name, body) VALUES (?, ?) "
            "ON CONFLICT(name) DO UPDATE SET body = excluded.body",
            [definition.name, m.dumps(converter.unstructure(definition))],
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
            "INSERT INTO flag_tags (flag, tag_type, value) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            [flag, tag.type, tag.value],
        )

    def remove_flag_tag(self, flag: str, tag: Tag) -> None:
        self._run(
            "DELETE FROM flag_tags WHERE flag = ? AND tag_type = ? AND value = ?",
            [flag, tag.type, tag.value],
        )

    # --- API tokens ---
    def get_token(self, secret_hash: str) -> ApiToken | None:
        row = self._one("SELECT * FROM api_tokens WHERE secret_hash = ?", [secret_hash])
        return None if row is None else m.token_from_row(row)

    def list_tokens(self) -> Sequence[ApiToken]:
        return [
            m.token_from_row(row)
            for row in self._rows("SELECT * FROM api_tokens ORDER BY created_at")
        ]

    def save_token(self, token: ApiToken) -> None:
        self._run(
            "INSERT INTO api_tokens (secret_hash, name, type, secret_hint, projects, "
            "environment, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(secret_hash) DO UPDATE SET name = excluded.name, type = excluded.type, "
            "secret_hint = excluded.secret_hint, projects = excluded.projects, "
            "environment = excluded.environment, created_at = excluded.created_at",
            [
                token.secret_hash,
                token.name,
                token.type.value,
                token.secret_hint,
                m.dumps(list(token.projects)),
                token.environment,
                m.time_text(token.created_at),
            ],
        )

    def delete_token(self, secret_hash: str) -> None:
        self._run("DELETE FROM api_tokens WHERE secret_hash = ?", [secret_hash])

    # --- signals ---
    def create_signal_endpoint(
        self, name: str, description: str | None, enabled: bool, created_at: dt.datetime
    ) -> SignalEndpoint:
        endpoint_id = self._insert(
            "INSERT INTO signal_endpoints (name, description, enabled, created_at) "
            "VALUES (?, ?, ?, ?)",
            [name, description, enabled, m.time_text(created_at)],
        )
        return SignalEndpoint(endpoint_id, name, description, enabled, created_at)

    def get_signal_endpoint(self, endpoint_id: int) -> SignalEndpoint | None:
        row = self._one("SELECT * FROM signal_endpoints WHERE id = ?", [endpoint_id])
        return None if row is None else m.endpoint_from_row(row)

    def find_signal_endpoint(self, name: str) -> SignalEndpoint | None:
        row = self._one("SELECT * FROM signal_endpoints WHERE name = ?", [name])
        return None if row is None else m.endpoint_from_row(row)

    def list_signal_endpoints(self) -> Sequence[SignalEndpoint]:
        return [
            m.endpoint_from_row(row)
            for row in self._rows("SELECT * FROM signal_endpoints ORDER BY id")
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
        token_id = self._insert(
            "INSERT INTO signal_endpoint_tokens (endpoint_id, name, secret_hash, created_at) "
            "VALUES (?, ?, ?, ?)",
            [endpoint_id, name, secret_hash, m.time_text(created_at)],
        )
        return SignalEndpointToken(token_id, endpoint_id, name, secret_hash, created_at)

    def list_signal_endpoint_tokens(self, endpoint_id: int) -> Sequence[SignalEndpointToken]:
        return [
            SignalEndpointToken(
                row["id"],
                row["endpoint_id"],
                row["name"],
                row["secret_hash"],
                m.required_time(row["created_at"]),
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
        signal_id = self._insert(
            "INSERT INTO signals (endpoint_id, token_id, payload, created_at) VALUES (?, ?, ?, ?)",
            [endpoint_id, token_id, m.dumps(payload), m.time_text(created_at)],
        )
        return Signal(signal_id, endpoint_id, token_id, payload, created_at)

    def list_signals(
        self, *, endpoint_id: int | None = None, limit: int = 50, before_id: int | None = None
    ) -> Sequence[Signal]:
        where_sql, params = m.where({"endpoint_id = ?": endpoint_id, "id < ?": before_id})
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
                m.required_time(row["created_at"]),
            )
            for row in rows
        ]

    # --- action sets ---
    def create_action_set(self, action_set: ActionSet) -> ActionSet:
        action_set_id = self._insert(
            "INSERT INTO action_sets (name, project, source, body, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                action_set.name,
                action_set.project,
                action_set.source,
                m.dumps(m.action_set_body(action_set)),
                m.time_text(action_set.created_at),
            ],
        )
        return attrs.evolve(action_set, id=action_set_id)

    def get_action_set(self, action_set_id: int) -> ActionSet | None:
        row = self._one("SELECT * FROM action_sets WHERE id = ?", [action_set_id])
        return None if row is None else m.action_set_from_row(row)

    def list_action_sets(
        self, *, project: str | None = None, source: int | None = None
    ) -> Sequence[ActionSet]:
        where_sql, params = m.where({"project = ?": project, "source = ?": source})
        sql = f"SELECT * FROM action_sets WHERE {where_sql} ORDER BY id"
        return [m.action_set_from_row(row) for row in self._rows(sql, params)]

    def save_action_set(self, action_set: ActionSet) -> None:
        self._run(
            "UPDATE action_sets SET name = ?, project = ?, source = ?, body = ? WHERE id = ?",
            [
                action_set.name,
                action_set.project,
                action_set.source,
                m.dumps(m.action_set_body(action_set)),
                action_set.id,
            ],
        )

    def delete_action_set(self, action_set_id: int) -> None:
        self._run("DELETE FROM action_sets WHERE id = ?", [action_set_id])

    def add_action_execution(self, execution: ActionExecution) -> ActionExecution:
        body = {
            "actionSet": m.action_set_json(execution.action_set),
            "signal": m.signal_json(execution.signal),
            "outcomes": [
                {"action": m.action_json(o.action), "state": o.state.value, "details": o.details}
                for o in execution.outcomes
            ],
        }
        # The unique index on (action_set_id, signal_id) makes a second run a Conflict.
        execution_id = self._insert(
            "INSERT INTO action_set_events (action_set_id, signal_id, state, body, created_at) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                execution.action_set_id,
                execution.signal_id,
                execution.state.value,
                m.dumps(body),
                m.time_text(execution.created_at),
            ],
        )
        return attrs.evolve(execution, id=execution_id)

    def list_action_executions(
        self, *, action_set_id: int | None = None, limit: int = 50, offset: int = 0
    ) -> Sequence[ActionExecution]:
        where_sql, params = m.where({"action_set_id = ?": action_set_id})
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
                    m.action_set_from(body["actionSet"]),
                    m.signal_from(body["signal"]),
                    ActionState(row["state"]),
                    tuple(
                        ActionOutcome(
                            m.action_from(o["action"]), ActionState(o["state"]), o["details"]
                        )
                        for o in body["outcomes"]
                    ),
                    m.required_time(row["created_at"]),
                )
            )
        return executions

    # --- metrics and instances ---
    def add_flag_metrics(self, rows: Iterable[FlagMetrics]) -> None:
        yes = self._dialect.saturating_sum("flag_metrics.yes", "excluded.yes")
        no = self._dialect.saturating_sum("flag_metrics.no", "excluded.no")
        for row in rows:
            key = [row.flag, row.app_name, row.environment, m.time_text(row.hour)]
            current = self._one(
                "SELECT variants FROM flag_metrics WHERE flag = ? AND app_name = ? "
                "AND environment = ? AND hour = ?",
                key,
            )
            variants = dict(row.variants)
            if current is not None:
                for name, count in orjson.loads(current["variants"]).items():
                    variants[name] = min(variants.get(name, 0) + count, m.MAX_COUNT)
            self._run(
                "INSERT INTO flag_metrics (flag, app_name, environment, hour, yes, no, variants) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(flag, app_name, environment, hour) "
                f"DO UPDATE SET yes = {yes}, no = {no}, variants = excluded.variants",
                [*key, row.yes, row.no, m.dumps(variants)],
            )

    def list_flag_metrics(self, flag: str) -> Sequence[FlagMetrics]:
        return [
            FlagMetrics(
                row["flag"],
                row["app_name"],
                row["environment"],
                m.required_time(row["hour"]),
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
        for start in range(0, len(wanted), IN_CHUNK):
            chunk = wanted[start : start + IN_CHUNK]
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
            "environment = coalesce(excluded.environment, client_instances.environment), "
            "sdk_version = coalesce(excluded.sdk_version, client_instances.sdk_version), "
            "strategies = CASE WHEN excluded.strategies = '[]' THEN client_instances.strategies "
            "ELSE excluded.strategies END, "
            "started = coalesce(excluded.started, client_instances.started), "
            "interval = coalesce(excluded.interval, client_instances.interval), "
            "last_seen = excluded.last_seen",
            [
                instance.app_name,
                instance.instance_id,
                instance.environment,
                instance.sdk_version,
                m.dumps(list(instance.strategies)),
                m.time_text(instance.started),
                instance.interval,
                m.time_text(instance.last_seen),
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
                m.parse_time(row["started"]),
                row["interval"],
                m.required_time(row["last_seen"]),
            )
            for row in self._rows("SELECT * FROM client_instances ORDER BY app_name, instance_id")
        ]

    # --- retention ---
    def _delete_oldest(self, table: str, where: str, order: str, params: list[Any]) -> int:
        """Delete the first rows of ``table`` (by ``order``) matching ``where``; the last
        parameter is the LIMIT. Uses the indexes of migration m006, so a batch is cheap."""
        row_id = self._dialect.row_id
        return self._run(
            f"DELETE FROM {table} WHERE {row_id} IN "
            f"(SELECT {row_id} FROM {table} WHERE {where} ORDER BY {order} LIMIT ?)",
            params,
        )

    def delete_flag_metrics_before(self, hour: dt.datetime, limit: int) -> int:
        return self._delete_oldest("flag_metrics", "hour < ?", "hour", [m.time_text(hour), limit])

    def delete_client_instances_seen_before(self, time: dt.datetime, limit: int) -> int:
        return self._delete_oldest(
            "client_instances", "last_seen < ?", "last_seen", [m.time_text(time), limit]
        )

    def delete_signals_before(self, time: dt.datetime, limit: int) -> int:
        return self._delete_oldest("signals", "created_at < ?", "id", [m.time_text(time), limit])

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
            [m.time_text(time), limit],
        )
