"""The admin API's answers in Unleash's shapes: typed values, each with its row of keys.

Each class is built from what the service returns (``of``) and written by the writer its
table generates (`flagcore.wire.answer_table`); its schema in the OpenAPI document comes
from the same table. Entities whose attributes are already the answer (`Tag`, `Event`,
`StrategyParameter`) are registered as they are.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import attrs

from flagcore.entities import (
    ApiToken,
    Environment,
    EnvironmentState,
    Event,
    FlagDefinition,
    FlagDetails,
    Project,
    SegmentDefinition,
    SegmentDetails,
    StrategyDefinition,
    StrategyParameter,
    StrategyPlacement,
    Tag,
    TagType,
    TokenType,
)
from flagcore.errors import ErrorDetail
from flagcore.model import Constraint, Dependency, Strategy, Variant
from flagcore.wire.answer_table import AnswerField, answer
from flagcore.wire.converter import INT32_MAX, INT32_MIN

__all__ = [
    "ArchivedFlagAnswer",
    "ArchivedFlagsAnswer",
    "EnvironmentsAnswer",
    "ErrorAnswer",
    "EventsAnswer",
    "FlagAnswer",
    "FlagDetailsAnswer",
    "FlagEnvironmentAnswer",
    "FlagsAnswer",
    "HealthAnswer",
    "PlacementAnswer",
    "ProjectAnswer",
    "ProjectWithFlagCount",
    "ProjectsAnswer",
    "SegmentAnswer",
    "SegmentWithUsageAnswer",
    "SegmentsAnswer",
    "SegmentsWithUsageAnswer",
    "StrategiesUsingAnswer",
    "StrategyAnswer",
    "StrategyDefinitionAnswer",
    "StrategyDefinitionsAnswer",
    "StrategySegmentsAnswer",
    "TagTypesAnswer",
    "TagsAnswer",
    "TokenAnswer",
    "TokensAnswer",
    "UsageBufferAnswer",
    "VariantsAnswer",
]

# Stored in an SQL integer column, 32-bit in PostgreSQL (`flagcore.validation.check_sort_order`).
_SORT_ORDER = {"minimum": INT32_MIN, "maximum": INT32_MAX}


def _same(*attributes: str) -> tuple[AnswerField, ...]:
    """Rows whose key is the attribute's own name."""
    return tuple(AnswerField(name, name) for name in attributes)


# Entities that are their own answer.
answer(*_same("type", "value"))(Tag)
answer(*_same("name", "description"))(TagType)
answer(
    *_same("name", "type"),
    AnswerField("sort_order", "sortOrder", schema=_SORT_ORDER),
    AnswerField("enabled", "enabled"),
)(Environment)
answer(*_same("name", "type", "description", "required"))(StrategyParameter)
answer(
    *_same("id", "type"),
    AnswerField("created_by", "createdBy"),
    AnswerField("created_at", "createdAt"),
    AnswerField("feature_name", "featureName"),
    *_same("project", "environment", "data"),
    AnswerField("pre_data", "preData"),
)(Event)
# The error shape every refusal has: at least one detail (the message when there is none).
answer(AnswerField("message", "message"), AnswerField("path", "path", omitted_when_none=True))(
    ErrorDetail
)


@answer(*_same("name", "message"), AnswerField("details", "details", schema={"minItems": 1}))
@attrs.frozen
class ErrorAnswer:
    """``{"name", "message", "details": [...]}``, with at least one detail."""

    name: str
    message: str
    details: tuple[ErrorDetail, ...]

    @classmethod
    def of(cls, name: str, message: str, details: tuple[ErrorDetail, ...] = ()) -> ErrorAnswer:
        shown = tuple(d if d.path else ErrorDetail(d.message) for d in details)
        return cls(name, message, shown or (ErrorDetail(message),))


_FLAG_ROWS = (
    *_same("name", "description", "type", "project", "stale"),
    AnswerField("created_at", "createdAt"),
    AnswerField("impression_data", "impressionData"),
    AnswerField("archived", "archived"),
    AnswerField("archived_at", "archivedAt"),
    AnswerField("dependencies", "dependencies"),
    # Issue 32: older than its type's lifetime; given by the routes that compute it
    # (the project's flag list, one flag), left out elsewhere.
    AnswerField("potentially_stale", "potentiallyStale", omitted_when_none=True),
)


def _flag_fields(flag: FlagDefinition) -> dict[str, Any]:
    return {
        "name": flag.name,
        "description": flag.description,
        "type": flag.type,
        "project": flag.project,
        "stale": flag.stale,
        "created_at": flag.created_at,
        "impression_data": flag.impression_data,
        "archived": flag.archived,
        "archived_at": flag.archived_at,
        "dependencies": flag.dependencies,
    }


@answer(*_FLAG_ROWS)
@attrs.frozen
class FlagAnswer:
    """A flag as Unleash's admin API shows it, without its environments."""

    name: str
    description: str | None
    type: str
    project: str
    stale: bool
    created_at: dt.datetime
    impression_data: bool
    archived: bool
    archived_at: dt.datetime | None
    dependencies: tuple[Dependency, ...]
    potentially_stale: bool | None = attrs.field(default=None, kw_only=True)

    @classmethod
    def of(cls, flag: FlagDefinition, *, potentially_stale: bool | None = None) -> FlagAnswer:
        return cls(
            flag.name,
            flag.description,
            flag.type,
            flag.project,
            flag.stale,
            flag.created_at,
            flag.impression_data,
            flag.archived,
            flag.archived_at,
            flag.dependencies,
            potentially_stale=potentially_stale,
        )


@answer(
    *_same("id", "name", "title", "disabled"),
    AnswerField("sort_order", "sortOrder", schema=_SORT_ORDER),
    *_same("constraints", "parameters", "variants", "segments"),
)
@attrs.frozen
class StrategyAnswer:
    """A strategy as admins see it: every key, the admin-only ones first."""

    id: str | None
    name: str
    title: str | None
    disabled: bool
    sort_order: int | None
    constraints: tuple[Constraint, ...]
    parameters: Mapping[str, str]
    variants: tuple[Variant, ...]
    segments: tuple[int, ...]

    @classmethod
    def of(cls, value: Strategy) -> StrategyAnswer:
        return cls(
            value.id,
            value.name,
            value.title,
            value.disabled,
            value.sort_order,
            value.constraints,
            value.parameters,
            value.variants,
            value.segments,
        )


@answer(
    *_same("name", "enabled", "type"),
    AnswerField("sort_order", "sortOrder", schema=_SORT_ORDER),
    *_same("strategies", "variants"),
)
@attrs.frozen
class FlagEnvironmentAnswer:
    name: str
    enabled: bool
    type: str
    sort_order: int
    strategies: tuple[StrategyAnswer, ...]
    variants: tuple[Variant, ...]

    @classmethod
    def of(cls, state: EnvironmentState) -> FlagEnvironmentAnswer:
        return cls(
            state.environment.name,
            state.enabled,
            state.environment.type,
            state.environment.sort_order,
            tuple(StrategyAnswer.of(s) for s in state.strategies),
            state.variants,
        )


@answer(*_FLAG_ROWS, *_same("environments", "tags"))
@attrs.frozen
class FlagDetailsAnswer(FlagAnswer):
    """A flag with its state in every environment and its tags."""

    environments: tuple[FlagEnvironmentAnswer, ...]
    tags: tuple[Tag, ...]

    @classmethod
    def of_details(
        cls, details: FlagDetails, *, potentially_stale: bool | None = None
    ) -> FlagDetailsAnswer:
        return cls(
            **_flag_fields(details.flag),
            potentially_stale=potentially_stale,
            environments=tuple(FlagEnvironmentAnswer.of(e) for e in details.environments),
            tags=details.tags,
        )


@answer(*_FLAG_ROWS, *_same("variants", "tags", "strategy", "parameters"))
@attrs.frozen
class ArchivedFlagAnswer(FlagAnswer):
    """An archived flag in Unleash's v1 shape: its first variants, and its first strategy's
    name (``default`` without one) and parameters."""

    variants: tuple[Variant, ...]
    tags: tuple[Tag, ...]
    strategy: str
    parameters: Mapping[str, str]

    @classmethod
    def of_details(cls, details: FlagDetails) -> ArchivedFlagAnswer:
        first = next((s for e in details.environments for s in e.strategies), None)
        return cls(
            **_flag_fields(details.flag),
            variants=next((e.variants for e in details.environments if e.variants), ()),
            tags=details.tags,
            strategy=first.name if first else "default",
            parameters=first.parameters if first else {},
        )


_SEGMENT_ROWS = (
    *_same("id", "name", "description", "constraints"),
    AnswerField("project", "project", omitted_when_none=True),
    AnswerField("created_by", "createdBy"),
    AnswerField("created_at", "createdAt"),
)


def _segment_fields(value: SegmentDefinition) -> dict[str, Any]:
    rule = value.segment
    return {
        "id": rule.id,
        "name": rule.name,
        "description": rule.description,
        "constraints": rule.constraints,
        "project": rule.project,
        "created_by": value.created_by,
        "created_at": value.created_at,
    }


@answer(*_SEGMENT_ROWS)
@attrs.frozen
class SegmentAnswer:
    """A segment as Unleash's create and read answers show it (``project`` only if set)."""

    id: int
    name: str
    description: str | None
    constraints: tuple[Constraint, ...]
    project: str | None
    created_by: str | None
    created_at: dt.datetime

    @classmethod
    def of(cls, value: SegmentDefinition) -> SegmentAnswer:
        return cls(**_segment_fields(value))


@answer(
    *_SEGMENT_ROWS,
    AnswerField("used_in_projects", "usedInProjects"),
    AnswerField("used_in_features", "usedInFeatures"),
)
@attrs.frozen
class SegmentWithUsageAnswer(SegmentAnswer):
    """A segment as Unleash's segment list shows it: with the counts of its users."""

    used_in_projects: int
    used_in_features: int

    @classmethod
    def of_details(cls, value: SegmentDetails) -> SegmentWithUsageAnswer:
        return cls(
            **_segment_fields(value.definition),
            used_in_projects=value.used_in_projects,
            used_in_features=value.used_in_features,
        )


@answer(
    AnswerField("id", "id"),
    AnswerField("project_id", "projectId"),
    AnswerField("feature_name", "featureName"),
    AnswerField("strategy_name", "strategyName"),
    AnswerField("environment", "environment"),
)
@attrs.frozen
class PlacementAnswer:
    """Where a strategy that uses a segment lives."""

    id: str
    project_id: str | None
    feature_name: str
    strategy_name: str
    environment: str

    @classmethod
    def of(cls, value: StrategyPlacement, project: str | None) -> PlacementAnswer:
        return cls(value.id, project, value.flag, value.strategy.name, value.environment)


_PROJECT_ROWS = (*_same("id", "name", "description"), AnswerField("created_at", "createdAt"))


@answer(*_PROJECT_ROWS)
@attrs.frozen
class ProjectAnswer:
    id: str
    name: str
    description: str | None
    created_at: dt.datetime

    @classmethod
    def of(cls, value: Project) -> ProjectAnswer:
        return cls(value.id, value.name, value.description, value.created_at)


@answer(*_PROJECT_ROWS, AnswerField("feature_count", "featureCount"))
@attrs.frozen
class ProjectWithFlagCount(ProjectAnswer):
    """A project as Unleash's project list shows it: with how many flags it holds."""

    feature_count: int

    @classmethod
    def of_count(cls, value: Project, feature_count: int) -> ProjectWithFlagCount:
        return cls(value.id, value.name, value.description, value.created_at, feature_count)


@answer(
    AnswerField("id", "id"),
    AnswerField("token_name", "tokenName"),
    *_same("type", "projects", "project", "environment"),
    AnswerField("created_at", "createdAt"),
    AnswerField("secret_hint", "secretHint"),
    AnswerField("secret", "secret", omitted_when_none=True),
)
@attrs.frozen
class TokenAnswer:
    """A token as listed (flagcore's ``id``: Unleash lists the secret itself, and deletes a
    token by it only); ``secret`` only in the answer that created it."""

    id: str
    token_name: str
    type: TokenType
    projects: tuple[str, ...]
    project: str
    environment: str
    created_at: dt.datetime
    secret_hint: str | None
    secret: str | None = None

    @classmethod
    def of(cls, value: ApiToken, secret: str | None = None) -> TokenAnswer:
        return cls(
            value.id,
            value.name,
            value.type,
            value.projects,
            value.projects[0] if len(value.projects) == 1 else "[]",
            value.environment or "*",
            value.created_at,
            value.secret_hint,
            secret,
        )


@answer(
    AnswerField("name", "name"),
    AnswerField("display_name", "displayName"),
    *_same("title", "description", "editable", "deprecated", "parameters"),
)
@attrs.frozen
class StrategyDefinitionAnswer:
    name: str
    display_name: str | None
    title: str | None
    description: str | None
    editable: bool
    deprecated: bool
    parameters: tuple[StrategyParameter, ...]

    @classmethod
    def of(cls, value: StrategyDefinition) -> StrategyDefinitionAnswer:
        return cls(
            value.name,
            value.title,
            value.title,
            value.description,
            value.editable,
            value.deprecated,
            value.parameters,
        )


# The lists, each in its envelope as Unleash answers it.
@answer(*_same("version", "features"))
@attrs.frozen
class FlagsAnswer:
    version: int
    features: tuple[FlagAnswer, ...]


@answer(*_same("version", "features"))
@attrs.frozen
class ArchivedFlagsAnswer:
    version: int
    features: tuple[ArchivedFlagAnswer, ...]


@answer(*_same("version", "projects"))
@attrs.frozen
class ProjectsAnswer:
    version: int
    projects: tuple[ProjectWithFlagCount, ...]


@answer(*_same("segments"))
@attrs.frozen
class SegmentsAnswer:
    segments: tuple[SegmentAnswer, ...]


@answer(*_same("segments"))
@attrs.frozen
class SegmentsWithUsageAnswer:
    segments: tuple[SegmentWithUsageAnswer, ...]


@answer(
    AnswerField("strategies", "strategies"),
    AnswerField("change_request_strategies", "changeRequestStrategies"),
)
@attrs.frozen
class StrategiesUsingAnswer:
    """The strategies that use a segment (change requests: none here)."""

    strategies: tuple[PlacementAnswer, ...]
    change_request_strategies: tuple[Any, ...] = ()


@answer(*_same("tokens"))
@attrs.frozen
class TokensAnswer:
    tokens: tuple[TokenAnswer, ...]


@answer(*_same("version", "events"))
@attrs.frozen
class EventsAnswer:
    version: int
    events: tuple[Event, ...]


@answer(*_same("version", "strategies"))
@attrs.frozen
class StrategyDefinitionsAnswer:
    version: int
    strategies: tuple[StrategyDefinitionAnswer, ...]


@answer(*_same("version", "tags"))
@attrs.frozen
class TagsAnswer:
    version: int
    tags: tuple[Tag, ...]


@answer(*_same("version", "environments"))
@attrs.frozen
class EnvironmentsAnswer:
    version: int
    environments: tuple[Environment, ...]


@answer(AnswerField("version", "version"), AnswerField("tag_types", "tagTypes"))
@attrs.frozen
class TagTypesAnswer:
    version: int
    tag_types: tuple[TagType, ...]


@answer(
    AnswerField("project_id", "projectId"),
    AnswerField("strategy_id", "strategyId"),
    AnswerField("environment_id", "environmentId"),
    AnswerField("segment_ids", "segmentIds"),
)
@attrs.frozen
class StrategySegmentsAnswer:
    """The segments a strategy now uses, where it lives (Unleash echoes the request)."""

    project_id: str
    strategy_id: str
    environment_id: str
    segment_ids: tuple[int, ...]


@answer(*_same("version", "variants"))
@attrs.frozen
class VariantsAnswer:
    """A flag's variants in one environment."""

    version: int
    variants: tuple[Variant, ...]


@answer(
    AnswerField("entries", "entries"),
    AnswerField("capacity", "capacity"),
    AnswerField("evaluations", "evaluations"),
    AnswerField("instances", "instances"),
    AnswerField("dropped_evaluations", "droppedEvaluations"),
    AnswerField("dropped_registrations", "droppedRegistrations"),
)
@attrs.frozen
class UsageBufferAnswer:
    """SDK usage a node holds in memory for the store (``/ready`` during an outage)."""

    entries: int
    capacity: int
    evaluations: int
    instances: int
    dropped_evaluations: int
    dropped_registrations: int


@answer(
    AnswerField("health", "health", schema={"enum": ["GOOD", "BAD"]}),
    AnswerField("message", "message", omitted_when_none=True),
    AnswerField("usage_buffer", "usageBuffer", omitted_when_none=True),
)
@attrs.frozen
class HealthAnswer:
    """``GOOD``, or ``BAD`` with why (``/health``, ``/ready``); ``/ready`` adds the usage
    held for the store while there is any."""

    health: str
    message: str | None = None
    usage_buffer: UsageBufferAnswer | None = None
