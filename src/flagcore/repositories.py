"""The port's named methods, written once over the generic keyed repository.

`KeptEntities` gives a store every plain get/list/save/delete of `flagcore.ports` in
terms of its five `flagcore.ports.Records` methods and the `flagcore.tables` table
descriptions, so a store implements those five (plus the metrics buckets and retention,
which are logic) and inherits the rest. A store that keeps an entity its own way writes
that entity's methods itself, ahead of this class in its bases.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

import attrs

from flagcore.entities import (
    ActionExecution,
    ActionSet,
    ApiToken,
    Environment,
    Event,
    FlagDefinition,
    FlagEnvironment,
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
from flagcore.model import Segment
from flagcore.tables import (
    ACTION_EXECUTIONS,
    ACTION_SETS,
    API_TOKENS,
    ENDPOINT_TOKENS,
    ENVIRONMENTS,
    EVENTS,
    FLAG_ENVIRONMENTS,
    FLAG_TAGS,
    FLAGS,
    IS_NULL,
    NOT_NULL,
    PROJECTS,
    SEGMENTS,
    SIGNAL_ENDPOINTS,
    SIGNALS,
    STRATEGIES,
    STRATEGY_DEFINITIONS,
    TAG_TYPES,
    Below,
    FlagTag,
    Table,
)

__all__ = ["KeptEntities"]

_E = TypeVar("_E")


def _where(**conditions: Any) -> dict[str, Any]:
    """The conditions that are set (None: not asked), by attribute path (``__`` → ``.``)."""
    return {
        path.replace("__", "."): value for path, value in conditions.items() if value is not None
    }


class KeptEntities:
    """Every plain method of the port's parts over `flagcore.ports.Records`."""

    # --- the generic repository, which the store provides ---
    def get_record(self, table: Table[_E], key: Any) -> _E | None:
        raise NotImplementedError

    def list_records(
        self,
        table: Table[_E],
        where: Mapping[str, Any] | None = None,
        *,
        limit: int | None = None,
        offset: int = 0,
    ) -> Sequence[_E]:
        raise NotImplementedError

    def save_record(self, table: Table[_E], entity: _E) -> None:
        raise NotImplementedError

    def delete_record(self, table: Table[_E], key: Any) -> None:
        raise NotImplementedError

    def create_record(self, table: Table[_E], entity: _E) -> _E:
        raise NotImplementedError

    # --- EventLog ---
    def append_event(
        self,
        type: str,
        created_by: str,
        *,
        feature_name: str | None = None,
        project: str | None = None,
        environment: str | None = None,
        data: Mapping[str, Any] | None = None,
        pre_data: Mapping[str, Any] | None = None,
    ) -> Event:
        now = dt.datetime.now(dt.UTC)
        event = Event(0, type, created_by, now, feature_name, project, environment, data, pre_data)
        return self.create_record(EVENTS, event)

    def list_events(
        self, *, limit: int = 100, before_id: int | None = None, feature_name: str | None = None
    ) -> Sequence[Event]:
        where = _where(id=None if before_id is None else Below(before_id))
        return self.list_records(EVENTS, where | _where(feature_name=feature_name), limit=limit)

    # --- ProjectRepository ---
    def get_project(self, project_id: str) -> Project | None:
        return self.get_record(PROJECTS, project_id)

    def list_projects(self) -> Sequence[Project]:
        return self.list_records(PROJECTS)

    def save_project(self, project: Project) -> None:
        self.save_record(PROJECTS, project)

    def delete_project(self, project_id: str) -> None:
        self.delete_record(PROJECTS, project_id)

    def get_environment(self, name: str) -> Environment | None:
        return self.get_record(ENVIRONMENTS, name)

    def list_environments(self) -> Sequence[Environment]:
        return self.list_records(ENVIRONMENTS)

    def save_environment(self, environment: Environment) -> None:
        self.save_record(ENVIRONMENTS, environment)

    # --- FlagRepository ---
    def get_flag(self, name: str) -> FlagDefinition | None:
        return self.get_record(FLAGS, name)

    def list_flags(
        self, *, project: str | None = None, archived: bool | None = False
    ) -> Sequence[FlagDefinition]:
        archived_at = None if archived is None else NOT_NULL if archived else IS_NULL
        return self.list_records(FLAGS, _where(project=project, archived_at=archived_at))

    def save_flag(self, flag: FlagDefinition) -> None:
        self.save_record(FLAGS, flag)

    def delete_flag(self, name: str) -> None:
        self.delete_record(FLAGS, name)

    def get_flag_environment(self, flag: str, environment: str) -> FlagEnvironment | None:
        return self.get_record(FLAG_ENVIRONMENTS, (flag, environment))

    def list_flag_environments(
        self, *, flag: str | None = None, environment: str | None = None
    ) -> Sequence[FlagEnvironment]:
        return self.list_records(FLAG_ENVIRONMENTS, _where(flag=flag, environment=environment))

    def save_flag_environment(self, state: FlagEnvironment) -> None:
        self.save_record(FLAG_ENVIRONMENTS, state)

    # --- StrategyRepository ---
    def get_strategy(self, strategy_id: str) -> StrategyPlacement | None:
        return self.get_record(STRATEGIES, strategy_id)

    def list_strategies(
        self, *, flag: str | None = None, environment: str | None = None
    ) -> Sequence[StrategyPlacement]:
        return self.list_records(STRATEGIES, _where(flag=flag, environment=environment))

    def save_strategy(self, placement: StrategyPlacement) -> None:
        self.save_record(STRATEGIES, placement)

    def delete_strategy(self, strategy_id: str) -> None:
        self.delete_record(STRATEGIES, strategy_id)

    def strategies_using_segment(self, segment_id: int) -> Sequence[StrategyPlacement]:
        return [p for p in self.list_strategies() if segment_id in p.strategy.segments]

    # --- SegmentRepository (kept as `SegmentDefinition`s: the rule and its creation) ---
    def get_segment(self, segment_id: int) -> Segment | None:
        definition = self.get_segment_definition(segment_id)
        return None if definition is None else definition.segment

    def list_segments(self) -> Sequence[Segment]:
        return [definition.segment for definition in self.list_segment_definitions()]

    def get_segment_definition(self, segment_id: int) -> SegmentDefinition | None:
        return self.get_record(SEGMENTS, segment_id)

    def list_segment_definitions(self) -> Sequence[SegmentDefinition]:
        return self.list_records(SEGMENTS)

    def create_segment(
        self,
        segment: Segment,
        *,
        created_by: str | None = None,
        created_at: dt.datetime | None = None,
    ) -> Segment:
        created_at = created_at or dt.datetime.now(dt.UTC)
        definition = SegmentDefinition(segment, created_at, created_by)
        return self.create_record(SEGMENTS, definition).segment

    def save_segment(self, segment: Segment) -> None:
        before = self.get_record(SEGMENTS, segment.id)
        definition = SegmentDefinition(segment) if before is None else before
        self.save_record(SEGMENTS, attrs.evolve(definition, segment=segment))

    def delete_segment(self, segment_id: int) -> None:
        self.delete_record(SEGMENTS, segment_id)

    # --- StrategyDefinitions ---
    def get_strategy_definition(self, name: str) -> StrategyDefinition | None:
        return self.get_record(STRATEGY_DEFINITIONS, name)

    def list_strategy_definitions(self) -> Sequence[StrategyDefinition]:
        return self.list_records(STRATEGY_DEFINITIONS)

    def save_strategy_definition(self, definition: StrategyDefinition) -> None:
        self.save_record(STRATEGY_DEFINITIONS, definition)

    # --- TagRepository ---
    def get_tag_type(self, name: str) -> TagType | None:
        return self.get_record(TAG_TYPES, name)

    def list_tag_types(self) -> Sequence[TagType]:
        return self.list_records(TAG_TYPES)

    def save_tag_type(self, tag_type: TagType) -> None:
        self.save_record(TAG_TYPES, tag_type)

    def delete_tag_type(self, name: str) -> None:
        self.delete_record(TAG_TYPES, name)

    def list_flag_tags(self, flag: str | None = None) -> Sequence[tuple[str, Tag]]:
        kept = self.list_records(FLAG_TAGS, _where(flag=flag))
        return [(row.flag, Tag(row.tag_type, row.value)) for row in kept]

    def add_flag_tag(self, flag: str, tag: Tag) -> None:
        self.save_record(FLAG_TAGS, FlagTag(flag, tag.type, tag.value))

    def remove_flag_tag(self, flag: str, tag: Tag) -> None:
        self.delete_record(FLAG_TAGS, (flag, tag.type, tag.value))

    # --- TokenRepository ---
    def get_token(self, secret_hash: str) -> ApiToken | None:
        return self.get_record(API_TOKENS, secret_hash)

    def list_tokens(self) -> Sequence[ApiToken]:
        return self.list_records(API_TOKENS)

    def save_token(self, token: ApiToken) -> None:
        self.save_record(API_TOKENS, token)

    def delete_token(self, secret_hash: str) -> None:
        self.delete_record(API_TOKENS, secret_hash)

    # --- SignalRepository ---
    def create_signal_endpoint(
        self, name: str, description: str | None, enabled: bool, created_at: dt.datetime
    ) -> SignalEndpoint:
        endpoint = SignalEndpoint(0, name, description, enabled, created_at)
        return self.create_record(SIGNAL_ENDPOINTS, endpoint)

    def get_signal_endpoint(self, endpoint_id: int) -> SignalEndpoint | None:
        return self.get_record(SIGNAL_ENDPOINTS, endpoint_id)

    def find_signal_endpoint(self, name: str) -> SignalEndpoint | None:
        found = self.list_records(SIGNAL_ENDPOINTS, {"name": name}, limit=1)
        return found[0] if found else None

    def list_signal_endpoints(self) -> Sequence[SignalEndpoint]:
        return self.list_records(SIGNAL_ENDPOINTS)

    def save_signal_endpoint(self, endpoint: SignalEndpoint) -> None:
        self.save_record(SIGNAL_ENDPOINTS, endpoint)

    def delete_signal_endpoint(self, endpoint_id: int) -> None:
        self.delete_record(SIGNAL_ENDPOINTS, endpoint_id)

    def create_signal_endpoint_token(
        self, endpoint_id: int, name: str, secret_hash: str, created_at: dt.datetime
    ) -> SignalEndpointToken:
        token = SignalEndpointToken(0, endpoint_id, name, secret_hash, created_at)
        return self.create_record(ENDPOINT_TOKENS, token)

    def list_signal_endpoint_tokens(self, endpoint_id: int) -> Sequence[SignalEndpointToken]:
        return self.list_records(ENDPOINT_TOKENS, {"endpoint_id": endpoint_id})

    def delete_signal_endpoint_token(self, token_id: int) -> None:
        self.delete_record(ENDPOINT_TOKENS, token_id)

    def add_signal(
        self, endpoint_id: int, token_id: int | None, payload: Any, created_at: dt.datetime
    ) -> Signal:
        return self.create_record(SIGNALS, Signal(0, endpoint_id, token_id, payload, created_at))

    def list_signals(
        self, *, endpoint_id: int | None = None, limit: int = 50, before_id: int | None = None
    ) -> Sequence[Signal]:
        where = _where(endpoint_id=endpoint_id, id=None if before_id is None else Below(before_id))
        return self.list_records(SIGNALS, where, limit=limit)

    # --- ActionRepository ---
    def create_action_set(self, action_set: ActionSet) -> ActionSet:
        return self.create_record(ACTION_SETS, action_set)

    def get_action_set(self, action_set_id: int) -> ActionSet | None:
        return self.get_record(ACTION_SETS, action_set_id)

    def list_action_sets(
        self, *, project: str | None = None, source: int | None = None
    ) -> Sequence[ActionSet]:
        return self.list_records(ACTION_SETS, _where(project=project, source=source))

    def save_action_set(self, action_set: ActionSet) -> None:
        self.save_record(ACTION_SETS, action_set)

    def delete_action_set(self, action_set_id: int) -> None:
        self.delete_record(ACTION_SETS, action_set_id)

    def add_action_execution(self, execution: ActionExecution) -> ActionExecution:
        return self.create_record(ACTION_EXECUTIONS, execution)

    def list_action_executions(
        self, *, action_set_id: int | None = None, limit: int = 50, offset: int = 0
    ) -> Sequence[ActionExecution]:
        where = _where(action_set__id=action_set_id)
        return self.list_records(ACTION_EXECUTIONS, where, limit=limit, offset=offset)
