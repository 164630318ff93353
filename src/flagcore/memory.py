"""The in-memory store: the reference implementation of `flagcore.ports`.

Every value is frozen, so a table is a plain dict of values. A transaction holds the
store's lock and keeps an undo log (table, key, previous value): commit drops the log,
rollback replays it backwards. That makes the memory store transactional in the same
way the durable stores are, so one contract suite covers all of them.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import attrs

from flagcore.entities import (
    ActionExecution,
    ActionSet,
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
from flagcore.errors import Conflict
from flagcore.model import Segment

__all__ = ["MemoryStore"]

_MISSING = object()
_MAX_COUNT = 2**63 - 1  # as in the SQL stores: sums of metric counts stop there
_TABLES = (
    "events",
    "action_sets",
    "action_executions",
    "projects",
    "environments",
    "flags",
    "flag_environments",
    "strategies",
    "segments",
    "tag_types",
    "flag_tags",
    "tokens",
    "signal_endpoints",
    "endpoint_tokens",
    "signals",
    "metrics",
    "instances",
    "counters",
    "strategy_definitions",
)


class MemoryStore:
    """Keeps everything in dicts; fast, not durable. Thread-safe (one transaction at a time)."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._tables: dict[str, dict[Any, Any]] = {name: {} for name in _TABLES}
        # The revision as of the last commit: `revision` reads it without the lock, so it
        # never waits for a unit in progress, and never sees one that may roll back.
        self._revision = 0

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[MemoryTransaction]:
        with self._lock:
            tx = MemoryTransaction(self._tables)
            try:
                yield tx
            except BaseException:
                tx.rollback()
                raise
            self._revision = int(self._tables["counters"].get("events", 0))

    def revision(self) -> int:
        return self._revision

    def close(self) -> None:
        """Nothing to release: the port asks every store for ``close``."""


class MemoryTransaction:
    """One unit of work over the store's tables, undone on failure."""

    def __init__(self, tables: dict[str, dict[Any, Any]]) -> None:
        self._tables = tables
        self._undo: list[tuple[str, Any, Any]] = []

    # --- plumbing ---
    def _put(self, table: str, key: Any, value: Any) -> None:
        rows = self._tables[table]
        self._undo.append((table, key, rows.get(key, _MISSING)))
        rows[key] = value

    def _drop(self, table: str, key: Any) -> None:
        rows = self._tables[table]
        if key in rows:
            self._undo.append((table, key, rows[key]))
            del rows[key]

    def _drop_where(self, table: str, keep: Callable[[Any, Any], bool]) -> None:
        for key in [key for key, value in self._tables[table].items() if not keep(key, value)]:
            self._drop(table, key)

    def _next_id(self, counter: str) -> int:
        value = int(self._tables["counters"].get(counter, 0)) + 1
        self._put("counters", counter, value)
        return value

    def rollback(self) -> None:
        for table, key, previous in reversed(self._undo):
            if previous is _MISSING:
                self._tables[table].pop(key, None)
            else:
                self._tables[table][key] = previous
        self._undo.clear()

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
        event = Event(
            id=self._next_id("events"),
            type=type,
            created_by=created_by,
            feature_name=feature_name,
            project=project,
            environment=environment,
            data=data,
            pre_data=pre_data,
        )
        self._put("events", event.id, event)
        return event

    def list_events(
        self, *, limit: int = 100, before_id: int | None = None, feature_name: str | None = None
    ) -> Sequence[Event]:
        events = [
            event
            for event in self._tables["events"].values()
            if (before_id is None or event.id < before_id)
            and (feature_name is None or event.feature_name == feature_name)
        ]
        return sorted(events, key=lambda event: -event.id)[:limit]

    # --- projects and environments ---
    def get_project(self, project_id: str) -> Project | None:
        return self._tables["projects"].get(project_id)

    def list_projects(self) -> Sequence[Project]:
        return sorted(self._tables["projects"].values(), key=lambda p: p.id)

    def save_project(self, project: Project) -> None:
        self._put("projects", project.id, project)

    def delete_project(self, project_id: str) -> None:
        self._drop("projects", project_id)

    def get_environment(self, name: str) -> Environment | None:
        return self._tables["environments"].get(name)

    def list_environments(self) -> Sequence[Environment]:
        return sorted(self._tables["environments"].values(), key=lambda e: (e.sort_order, e.name))

    def save_environment(self, environment: Environment) -> None:
        self._put("environments", environment.name, environment)

    # --- flags ---
    def get_flag(self, name: str) -> FlagDefinition | None:
        return self._tables["flags"].get(name)

    def list_flags(
        self, *, project: str | None = None, archived: bool | None = False
    ) -> Sequence[FlagDefinition]:
        return sorted(
            (
                flag
                for flag in self._tables["flags"].values()
                if (project is None or flag.project == project)
                and (archived is None or flag.archived is archived)
            ),
            key=lambda flag: (flag.created_at, flag.name),
        )

    def save_flag(self, flag: FlagDefinition) -> None:
        self._put("flags", flag.name, flag)

    def delete_flag(self, name: str) -> None:
        self._drop("flags", name)
        self._drop_where("flag_environments", lambda key, _v: key[0] != name)
        self._drop_where("strategies", lambda _k, placement: placement.flag != name)
        self._drop_where("flag_tags", lambda key, _v: key[0] != name)

    def get_flag_environment(self, flag: str, environment: str) -> FlagEnvironment | None:
        return self._tables["flag_environments"].get((flag, environment))

    def list_flag_environments(
        self, *, flag: str | None = None, environment: str | None = None
    ) -> Sequence[FlagEnvironment]:
        return [
            state
            for (name, env), state in sorted(self._tables["flag_environments"].items())
            if (flag is None or name == flag) and (environment is None or env == environment)
        ]

    def save_flag_environment(self, state: FlagEnvironment) -> None:
        self._put("flag_environments", (state.flag, state.environment), state)

    # --- strategies ---
    def get_strategy(self, strategy_id: str) -> StrategyPlacement | None:
        return self._tables["strategies"].get(strategy_id)

    def list_strategies(
        self, *, flag: str | None = None, environment: str | None = None
    ) -> Sequence[StrategyPlacement]:
        return sorted(
            (
                placement
                for placement in self._tables["strategies"].values()
                if (flag is None or placement.flag == flag)
                and (environment is None or placement.environment == environment)
            ),
            key=lambda p: (p.flag, p.environment, p.strategy.sort_order or 0, p.id),
        )

    def save_strategy(self, placement: StrategyPlacement) -> None:
        self._put("strategies", placement.id, placement)

    def delete_strategy(self, strategy_id: str) -> None:
        self._drop("strategies", strategy_id)

    def strategies_using_segment(self, segment_id: int) -> Sequence[StrategyPlacement]:
        return [
            placement
            for placement in self.list_strategies()
            if segment_id in placement.strategy.segments
        ]

    # --- segments (kept as `SegmentDefinition`s: the rule and its creation) ---
    def get_segment(self, segment_id: int) -> Segment | None:
        definition = self.get_segment_definition(segment_id)
        return None if definition is None else definition.segment

    def list_segments(self) -> Sequence[Segment]:
        return [definition.segment for definition in self.list_segment_definitions()]

    def get_segment_definition(self, segment_id: int) -> SegmentDefinition | None:
        return self._tables["segments"].get(segment_id)

    def list_segment_definitions(self) -> Sequence[SegmentDefinition]:
        return sorted(self._tables["segments"].values(), key=lambda d: d.id)

    def create_segment(
        self,
        segment: Segment,
        *,
        created_by: str | None = None,
        created_at: dt.datetime | None = None,
    ) -> Segment:
        created = attrs.evolve(segment, id=self._next_id("segments"))
        definition = SegmentDefinition(created, created_at or dt.datetime.now(dt.UTC), created_by)
        self._put("segments", created.id, definition)
        return created

    def save_segment(self, segment: Segment) -> None:
        before = self._tables["segments"].get(segment.id)
        definition = SegmentDefinition(segment) if before is None else before
        self._put("segments", segment.id, attrs.evolve(definition, segment=segment))

    def delete_segment(self, segment_id: int) -> None:
        self._drop("segments", segment_id)

    # --- strategy definitions ---
    def get_strategy_definition(self, name: str) -> StrategyDefinition | None:
        return self._tables["strategy_definitions"].get(name)

    def list_strategy_definitions(self) -> Sequence[StrategyDefinition]:
        return sorted(self._tables["strategy_definitions"].values(), key=lambda d: d.name)

    def save_strategy_definition(self, definition: StrategyDefinition) -> None:
        self._put("strategy_definitions", definition.name, definition)

    # --- tags ---
    def get_tag_type(self, name: str) -> TagType | None:
        return self._tables["tag_types"].get(name)

    def list_tag_types(self) -> Sequence[TagType]:
        return sorted(self._tables["tag_types"].values(), key=lambda t: t.name)

    def save_tag_type(self, tag_type: TagType) -> None:
        self._put("tag_types", tag_type.name, tag_type)

    def delete_tag_type(self, name: str) -> None:
        self._drop("tag_types", name)
        self._drop_where("flag_tags", lambda key, _v: key[1].type != name)

    def list_flag_tags(self, flag: str | None = None) -> Sequence[tuple[str, Tag]]:
        return sorted(key for key in self._tables["flag_tags"] if flag is None or key[0] == flag)

    def add_flag_tag(self, flag: str, tag: Tag) -> None:
        self._put("flag_tags", (flag, tag), True)

    def remove_flag_tag(self, flag: str, tag: Tag) -> None:
        self._drop("flag_tags", (flag, tag))

    # --- API tokens ---
    def get_token(self, secret_hash: str) -> ApiToken | None:
        return self._tables["tokens"].get(secret_hash)

    def list_tokens(self) -> Sequence[ApiToken]:
        return sorted(self._tables["tokens"].values(), key=lambda t: (t.created_at, t.name))

    def save_token(self, token: ApiToken) -> None:
        self._put("tokens", token.secret_hash, token)

    def delete_token(self, secret_hash: str) -> None:
        self._drop("tokens", secret_hash)

    # --- signals ---
    def create_signal_endpoint(
        self, name: str, description: str | None, enabled: bool, created_at: dt.datetime
    ) -> SignalEndpoint:
        endpoint = SignalEndpoint(
            self._next_id("signal_endpoints"), name, description, enabled, created_at
        )
        self._put("signal_endpoints", endpoint.id, endpoint)
        return endpoint

    def get_signal_endpoint(self, endpoint_id: int) -> SignalEndpoint | None:
        return self._tables["signal_endpoints"].get(endpoint_id)

    def find_signal_endpoint(self, name: str) -> SignalEndpoint | None:
        for endpoint in self._tables["signal_endpoints"].values():
            if endpoint.name == name:
                return endpoint  # type: ignore[no-any-return]
        return None

    def list_signal_endpoints(self) -> Sequence[SignalEndpoint]:
        return sorted(self._tables["signal_endpoints"].values(), key=lambda e: e.id)

    def save_signal_endpoint(self, endpoint: SignalEndpoint) -> None:
        self._put("signal_endpoints", endpoint.id, endpoint)

    def delete_signal_endpoint(self, endpoint_id: int) -> None:
        self._drop("signal_endpoints", endpoint_id)
        for action_set in self.list_action_sets(source=endpoint_id):
            self.delete_action_set(action_set.id)
        self._drop_where("endpoint_tokens", lambda _k, token: token.endpoint_id != endpoint_id)
        self._drop_where("signals", lambda _k, signal: signal.endpoint_id != endpoint_id)

    def create_signal_endpoint_token(
        self, endpoint_id: int, name: str, secret_hash: str, created_at: dt.datetime
    ) -> SignalEndpointToken:
        token = SignalEndpointToken(
            self._next_id("endpoint_tokens"), endpoint_id, name, secret_hash, created_at
        )
        self._put("endpoint_tokens", token.id, token)
        return token

    def list_signal_endpoint_tokens(self, endpoint_id: int) -> Sequence[SignalEndpointToken]:
        return sorted(
            (t for t in self._tables["endpoint_tokens"].values() if t.endpoint_id == endpoint_id),
            key=lambda t: t.id,
        )

    def delete_signal_endpoint_token(self, token_id: int) -> None:
        self._drop("endpoint_tokens", token_id)

    def add_signal(
        self, endpoint_id: int, token_id: int | None, payload: Any, created_at: dt.datetime
    ) -> Signal:
        signal = Signal(self._next_id("signals"), endpoint_id, token_id, payload, created_at)
        self._put("signals", signal.id, signal)
        return signal

    def list_signals(
        self, *, endpoint_id: int | None = None, limit: int = 50, before_id: int | None = None
    ) -> Sequence[Signal]:
        signals = [
            signal
            for signal in self._tables["signals"].values()
            if (endpoint_id is None or signal.endpoint_id == endpoint_id)
            and (before_id is None or signal.id < before_id)
        ]
        return sorted(signals, key=lambda s: -s.id)[:limit]

    # --- action sets ---
    def create_action_set(self, action_set: ActionSet) -> ActionSet:
        created = attrs.evolve(action_set, id=self._next_id("action_sets"))
        self._put("action_sets", created.id, created)
        return created

    def get_action_set(self, action_set_id: int) -> ActionSet | None:
        return self._tables["action_sets"].get(action_set_id)

    def list_action_sets(
        self, *, project: str | None = None, source: int | None = None
    ) -> Sequence[ActionSet]:
        return sorted(
            (
                a
                for a in self._tables["action_sets"].values()
                if (project is None or a.project == project)
                and (source is None or a.source == source)
            ),
            key=lambda a: a.id,
        )

    def save_action_set(self, action_set: ActionSet) -> None:
        self._put("action_sets", action_set.id, action_set)

    def delete_action_set(self, action_set_id: int) -> None:
        self._drop("action_sets", action_set_id)
        self._drop_where("action_executions", lambda _k, e: e.action_set_id != action_set_id)

    def add_action_execution(self, execution: ActionExecution) -> ActionExecution:
        for other in self._tables["action_executions"].values():
            if (other.action_set_id, other.signal_id) == (
                execution.action_set_id,
                execution.signal_id,
            ):
                raise Conflict(
                    f"action set {execution.action_set_id} already ran for signal "
                    f"{execution.signal_id}"
                )
        created = attrs.evolve(execution, id=self._next_id("action_executions"))
        self._put("action_executions", created.id, created)
        return created

    def list_action_executions(
        self, *, action_set_id: int | None = None, limit: int = 50, offset: int = 0
    ) -> Sequence[ActionExecution]:
        executions = [
            e
            for e in self._tables["action_executions"].values()
            if action_set_id is None or e.action_set_id == action_set_id
        ]
        return sorted(executions, key=lambda e: -e.id)[offset : offset + limit]

    # --- metrics and instances ---
    def add_flag_metrics(
        self,
        rows: Iterable[FlagMetrics],
        *,
        max_new: int | None = None,
        max_variants: int | None = None,
    ) -> int:
        created = 0
        for row in rows:
            key = (row.flag, row.app_name, row.environment, row.hour)
            current = self._tables["metrics"].get(key)
            if current is None:
                if max_new is not None and created >= max_new:
                    continue
                created += 1
                current = attrs.evolve(row, yes=0, no=0, variants={})
            variants = dict(current.variants)
            for name, count in row.variants.items():
                if name in variants or max_variants is None or len(variants) < max_variants:
                    variants[name] = min(variants.get(name, 0) + count, _MAX_COUNT)
            row = attrs.evolve(
                current,
                yes=min(current.yes + row.yes, _MAX_COUNT),
                no=min(current.no + row.no, _MAX_COUNT),
                variants=variants,
            )
            self._put("metrics", key, row)
        return created

    def list_flag_metrics(self, flag: str) -> Sequence[FlagMetrics]:
        return sorted(
            (row for key, row in self._tables["metrics"].items() if key[0] == flag),
            key=lambda row: (row.hour, row.app_name, row.environment),
        )

    def list_flag_metrics_since(self, hour: dt.datetime, *, limit: int) -> Sequence[FlagMetrics]:
        rows = (row for row in self._tables["metrics"].values() if row.hour >= hour)
        ordered = sorted(rows, key=lambda row: (row.flag, row.app_name, row.environment, row.hour))
        return ordered[:limit]

    def flag_projects(self, names: Collection[str]) -> Mapping[str, str]:
        flags = self._tables["flags"]
        return {name: flags[name].project for name in names if name in flags}

    def save_client_instance(self, instance: ClientInstance, *, create: bool = True) -> bool:
        """Merge: what a metrics post does not say (SDK version, ...) is kept from before."""
        key = (instance.app_name, instance.instance_id)
        before = self._tables["instances"].get(key)
        if before is None and not create:
            return False
        if before is not None:
            instance = attrs.evolve(
                instance,
                environment=instance.environment or before.environment,
                sdk_version=instance.sdk_version or before.sdk_version,
                strategies=instance.strategies or before.strategies,
                started=instance.started or before.started,
                interval=instance.interval if instance.interval is not None else before.interval,
            )
        self._put("instances", key, instance)
        return before is None

    def list_client_instances(self) -> Sequence[ClientInstance]:
        return [instance for _key, instance in sorted(self._tables["instances"].items())]

    # --- retention ---
    def _delete_oldest(self, table: str, old: Callable[[Any], bool], order: Any, limit: int) -> int:
        doomed = sorted(
            (key for key, row in self._tables[table].items() if old(row)),
            key=lambda key: order(self._tables[table][key]),
        )[: max(0, limit)]
        for key in doomed:
            self._drop(table, key)
        return len(doomed)

    def delete_flag_metrics_before(self, hour: dt.datetime, limit: int) -> int:
        return self._delete_oldest(
            "metrics", lambda row: row.hour < hour, lambda row: row.hour, limit
        )

    def delete_client_instances_seen_before(self, time: dt.datetime, limit: int) -> int:
        return self._delete_oldest(
            "instances", lambda row: row.last_seen < time, lambda row: row.last_seen, limit
        )

    def delete_signals_before(self, time: dt.datetime, limit: int) -> int:
        return self._delete_oldest(
            "signals", lambda row: row.created_at < time, lambda row: row.id, limit
        )

    def delete_signals_beyond_newest(self, endpoint_id: int, keep: int, limit: int) -> int:
        ids = sorted(
            (row.id for row in self._tables["signals"].values() if row.endpoint_id == endpoint_id),
            reverse=True,
        )
        doomed = set(ids[keep:])
        return self._delete_oldest(
            "signals", lambda row: row.id in doomed, lambda row: row.id, limit
        )

    def delete_events_before(self, time: dt.datetime, limit: int) -> int:
        newest = max(self._tables["events"], default=None)
        return self._delete_oldest(
            "events",
            lambda row: row.created_at < time and row.id != newest,
            lambda row: row.id,
            limit,
        )
