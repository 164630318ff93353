"""Unleash 8.2's playground answers as typed values, each with its row of keys.

`flagcore.service.playground` builds them from `Engine.explain`; the route writes them.
A strategy's ``result`` is one of three states (``unevaluated``, ``incomplete`` with
``enabled`` "unknown" or false, ``complete`` with a boolean and, when a strategy variant
was picked, ``variant`` and ``variants``); one class holds all three, the keys a state
does not have left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from flagcore.wire.answer_table import AnswerField, answer
from flagcore.wire.schema import schema_ref

__all__ = [
    "AdvancedPlaygroundAnswer",
    "AdvancedPlaygroundFeature",
    "AdvancedPlaygroundResult",
    "PlaygroundAnswer",
    "PlaygroundConstraint",
    "PlaygroundFeature",
    "PlaygroundLinks",
    "PlaygroundSegment",
    "PlaygroundStrategies",
    "PlaygroundStrategy",
    "PlaygroundVariant",
    "StrategyEvaluation",
    "StrategyVariant",
]

# Variants as Unleash lists them in the playground: the wire's, without null payloads or
# empty overrides (written once by the explanation, passed through as JSON).
_VARIANTS = {"items": schema_ref("Variant")}
# The body as it was sent.
_INPUT = AnswerField("input", "input", schema={"type": "object"})
_UNKNOWN_OR_BOOLEAN = {"anyOf": [{"type": "boolean"}, {"const": "unknown"}]}


@answer(
    AnswerField("context_name", "contextName"),
    AnswerField("operator", "operator"),
    AnswerField("values", "values"),
    AnswerField("inverted", "inverted"),
    AnswerField("case_insensitive", "caseInsensitive"),
    AnswerField("value", "value", omitted_when_none=True),
    AnswerField("result", "result"),
)
@attrs.frozen
class PlaygroundConstraint:
    context_name: str
    operator: str
    values: tuple[str, ...]
    inverted: bool
    case_insensitive: bool
    value: str | None
    result: bool


@answer(*(AnswerField(n, n) for n in ("name", "id", "result", "constraints")))
@attrs.frozen
class PlaygroundSegment:
    name: str
    id: int
    result: bool
    constraints: tuple[PlaygroundConstraint, ...]


@answer(
    AnswerField("name", "name"),
    AnswerField("enabled", "enabled", schema={"const": True}),
    AnswerField("payload", "payload", omitted_when_none=True),
)
@attrs.frozen
class StrategyVariant:
    """The variant a complete, enabled strategy picked."""

    name: str
    enabled: bool
    payload: Mapping[str, str] | None


@answer(
    AnswerField("enabled", "enabled", schema=_UNKNOWN_OR_BOOLEAN),
    AnswerField(
        "evaluation_status",
        "evaluationStatus",
        schema={"enum": ["unevaluated", "incomplete", "complete"]},
    ),
    AnswerField("variant", "variant", omitted_when_none=True),
    AnswerField("variants", "variants", omitted_when_none=True, schema=_VARIANTS),
)
@attrs.frozen
class StrategyEvaluation:
    enabled: bool | str
    evaluation_status: str
    variant: StrategyVariant | None = None
    variants: tuple[Mapping[str, Any], ...] | None = None


@answer(AnswerField("edit", "edit"))
@attrs.frozen
class PlaygroundLinks:
    edit: str


@answer(
    AnswerField("name", "name"),
    AnswerField("id", "id"),
    AnswerField("title", "title", omitted_when_none=True),
    *(AnswerField(n, n) for n in ("disabled", "parameters", "result", "constraints")),
    AnswerField("segments", "segments"),
    AnswerField("links", "links"),
)
@attrs.frozen
class PlaygroundStrategy:
    name: str
    id: str
    title: str | None
    disabled: bool
    parameters: Mapping[str, str]
    result: StrategyEvaluation
    constraints: tuple[PlaygroundConstraint, ...]
    segments: tuple[PlaygroundSegment, ...]
    links: PlaygroundLinks


@answer(AnswerField("result", "result", schema=_UNKNOWN_OR_BOOLEAN), AnswerField("data", "data"))
@attrs.frozen
class PlaygroundStrategies:
    result: bool | str
    data: tuple[PlaygroundStrategy, ...]


@answer(
    AnswerField("name", "name"),
    AnswerField("enabled", "enabled"),
    AnswerField("payload", "payload", omitted_when_none=True),
    AnswerField("feature_enabled", "feature_enabled"),
    AnswerField("feature_enabled_camel", "featureEnabled", omitted_when_none=True),
)
@attrs.frozen
class PlaygroundVariant:
    """The variant as Unleash's playground writes it: ``feature_enabled`` always, and
    ``featureEnabled`` too where its evaluator sets it (None: left out)."""

    name: str
    enabled: bool
    payload: Mapping[str, str] | None
    feature_enabled: bool
    feature_enabled_camel: bool | None


_FEATURE_ROWS = (
    AnswerField("name", "name"),
    AnswerField("project_id", "projectId"),
    AnswerField("is_enabled", "isEnabled"),
    AnswerField("is_enabled_in_current_environment", "isEnabledInCurrentEnvironment"),
    AnswerField("has_unsatisfied_dependency", "hasUnsatisfiedDependency"),
    AnswerField("strategies", "strategies"),
    AnswerField("variant", "variant"),
    AnswerField("variants", "variants", schema=_VARIANTS),
)


@answer(*_FEATURE_ROWS)
@attrs.frozen
class PlaygroundFeature:
    name: str
    project_id: str
    is_enabled: bool
    is_enabled_in_current_environment: bool
    has_unsatisfied_dependency: bool
    strategies: PlaygroundStrategies
    variant: PlaygroundVariant
    variants: tuple[Mapping[str, Any], ...]


@answer(
    *_FEATURE_ROWS, AnswerField("environment", "environment"), AnswerField("context", "context")
)
@attrs.frozen
class AdvancedPlaygroundResult(PlaygroundFeature):
    """One flag in one environment for one context combination."""

    environment: str
    context: Mapping[str, str]


@answer(
    AnswerField("name", "name"),
    AnswerField("project_id", "projectId"),
    AnswerField("environments", "environments"),
)
@attrs.frozen
class AdvancedPlaygroundFeature:
    name: str
    project_id: str
    environments: Mapping[str, tuple[AdvancedPlaygroundResult, ...]]


@answer(
    AnswerField("input", "input", schema={"type": "object"}), AnswerField("features", "features")
)
@attrs.frozen
class PlaygroundAnswer:
    """The answer: the body as sent (``input``), and every flag."""

    input: Any
    features: tuple[PlaygroundFeature, ...]


@answer(
    AnswerField("input", "input", schema={"type": "object"}), AnswerField("features", "features")
)
@attrs.frozen
class AdvancedPlaygroundAnswer:
    input: Any
    features: tuple[AdvancedPlaygroundFeature, ...]
