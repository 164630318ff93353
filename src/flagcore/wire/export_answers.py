"""Unleash's export file as flagcore writes it (``flagcore export``, ``POST
/api/admin/features-batch/export``), from answer-table rows: each list's items a typed
value whose writer and schema follow from its rows.

What is written is not quite what is read (`flagcore.wire.unleash_export`'s classes, whose
derived schema is what an import accepts): keys in Unleash's written order, a strategy's
``sortOrder`` always null (the list's order is the evaluation order), an environment
naming its flag twice, every key present. So the written items are values of their own,
made from the read ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import attrs

from flagcore.model import Constraint, Dependency, Variant
from flagcore.wire.answer_table import AnswerField, answer, write_answer
from flagcore.wire.fields import (
    DEPENDENCIES,
    DESCRIPTION,
    ENABLED,
    FEATURE,
    IMPRESSION_DATA,
    NAME,
    PROJECT,
    SEGMENTS,
    SORT_ORDER,
    STALE,
    STICKINESS,
    TYPE,
    VALUE,
    VARIANTS,
)
from flagcore.wire.unleash_export import (
    ARCHIVED,
    COLOR,
    CONTEXT_FIELDS,
    ENVIRONMENT,
    FEATURE_ENVIRONMENTS,
    FEATURE_NAME,
    FEATURE_STRATEGIES,
    FEATURE_TAGS,
    FEATURES,
    ICON,
    LEGAL_VALUES,
    LINKS,
    TAG_TYPE,
    TAG_TYPES,
    TAG_VALUE,
    ExportedContextField,
    ExportedEnvironment,
    ExportedStrategy,
    FeatureExport,
)

_A = TypeVar("_A")

__all__ = [
    "ExportContextFieldAnswer",
    "ExportDependenciesAnswer",
    "ExportEnvironmentAnswer",
    "ExportFileAnswer",
    "ExportFlagAnswer",
    "ExportLegalValueAnswer",
    "ExportSegmentAnswer",
    "ExportStrategyAnswer",
    "ExportTagAnswer",
    "ExportTagTypeAnswer",
    "write_export",
]


@answer(
    ("name", NAME),
    ("type", TYPE),
    ("description", DESCRIPTION),
    ("project", PROJECT),
    ("stale", STALE),
    ("impression_data", IMPRESSION_DATA),
    ("archived", ARCHIVED),
)
@attrs.frozen
class ExportFlagAnswer:
    name: str
    type: str
    description: str | None
    project: str | None
    stale: bool
    impression_data: bool
    archived: bool


@answer(
    ("feature_name", FEATURE_NAME),
    ("id", "id"),
    ("name", NAME),
    ("title", "title"),
    ("disabled", "disabled"),
    ("parameters", "parameters"),
    ("constraints", "constraints"),
    ("segments", SEGMENTS),
    ("variants", VARIANTS),
    AnswerField("sort_order", SORT_ORDER, schema={"type": "null"}),
)
@attrs.frozen
class ExportStrategyAnswer:
    feature_name: str
    id: str | None
    name: str
    title: str | None
    disabled: bool
    parameters: Mapping[str, str]
    constraints: tuple[Constraint, ...]
    segments: tuple[int, ...]
    variants: tuple[Variant, ...]
    sort_order: int | None  # always None (see the module's note)

    @classmethod
    def of(cls, s: ExportedStrategy) -> ExportStrategyAnswer:
        return cls(
            s.feature_name,
            s.id,
            s.name,
            s.title,
            s.disabled,
            s.parameters,
            s.constraints,
            s.segments,
            s.variants,
            None,
        )


@answer(
    ("name", NAME),
    ("feature_name", FEATURE_NAME),
    ("environment", ENVIRONMENT),
    ("enabled", ENABLED),
    ("variants", VARIANTS),
)
@attrs.frozen
class ExportEnvironmentAnswer:
    name: str  # Unleash writes the flag's name twice
    feature_name: str
    environment: str | None
    enabled: bool
    variants: tuple[Variant, ...]

    @classmethod
    def of(cls, e: ExportedEnvironment) -> ExportEnvironmentAnswer:
        return cls(e.feature_name, e.feature_name, e.environment, e.enabled, e.variants)


@answer(("value", VALUE), ("description", DESCRIPTION))
@attrs.frozen
class ExportLegalValueAnswer:
    value: str
    description: str | None


@answer(
    ("name", NAME),
    ("description", DESCRIPTION),
    ("legal_values", LEGAL_VALUES),
    ("stickiness", STICKINESS),
    ("sort_order", SORT_ORDER),
)
@attrs.frozen
class ExportContextFieldAnswer:
    name: str
    description: str | None
    legal_values: tuple[ExportLegalValueAnswer, ...]
    stickiness: bool
    sort_order: int | None

    @classmethod
    def of(cls, f: ExportedContextField) -> ExportContextFieldAnswer:
        legal = tuple(ExportLegalValueAnswer(v.value, v.description) for v in f.legal_values)
        return cls(f.name, f.description, legal, f.stickiness, f.sort_order)


@answer(("feature_name", FEATURE_NAME), ("tag_type", TAG_TYPE), ("tag_value", TAG_VALUE))
@attrs.frozen
class ExportTagAnswer:
    feature_name: str
    tag_type: str
    tag_value: str


@answer(("id", "id"), ("name", NAME))
@attrs.frozen
class ExportSegmentAnswer:
    id: int
    name: str


@answer(("name", NAME), ("description", DESCRIPTION), ("color", COLOR), ("icon", ICON))
@attrs.frozen
class ExportTagTypeAnswer:
    name: str
    description: str | None
    color: str | None
    icon: str | None


@answer(("feature", FEATURE), ("dependencies", DEPENDENCIES))
@attrs.frozen
class ExportDependenciesAnswer:
    feature: str
    dependencies: tuple[Dependency, ...]


@answer(
    ("features", FEATURES),
    ("feature_strategies", FEATURE_STRATEGIES),
    ("feature_environments", FEATURE_ENVIRONMENTS),
    ("context_fields", CONTEXT_FIELDS),
    ("feature_tags", FEATURE_TAGS),
    ("segments", SEGMENTS),
    ("tag_types", TAG_TYPES),
    ("dependencies", DEPENDENCIES),
    AnswerField("links", LINKS, schema={"maxItems": 0}),
)
@attrs.frozen
class ExportFileAnswer:
    """The whole file; ``links`` (Unleash's flag links) is always empty here."""

    features: tuple[ExportFlagAnswer, ...]
    feature_strategies: tuple[ExportStrategyAnswer, ...]
    feature_environments: tuple[ExportEnvironmentAnswer, ...]
    context_fields: tuple[ExportContextFieldAnswer, ...]
    feature_tags: tuple[ExportTagAnswer, ...]
    segments: tuple[ExportSegmentAnswer, ...]
    tag_types: tuple[ExportTagTypeAnswer, ...]
    dependencies: tuple[ExportDependenciesAnswer, ...]
    links: tuple[str, ...]

    @classmethod
    def of(cls, export: FeatureExport) -> ExportFileAnswer:
        return cls(
            _same(ExportFlagAnswer, export.features),
            tuple(map(ExportStrategyAnswer.of, export.feature_strategies)),
            tuple(map(ExportEnvironmentAnswer.of, export.feature_environments)),
            tuple(map(ExportContextFieldAnswer.of, export.context_fields)),
            _same(ExportTagAnswer, export.feature_tags),
            _same(ExportSegmentAnswer, export.segments),
            _same(ExportTagTypeAnswer, export.tag_types),
            _same(ExportDependenciesAnswer, export.dependencies),
            (),
        )


def _same(cls: type[_A], items: tuple[Any, ...]) -> tuple[_A, ...]:
    """Read items written with the same attributes in the same order."""
    return tuple(cls(*attrs.astuple(item, recurse=False)) for item in items)


def write_export(export: FeatureExport) -> dict[str, Any]:
    """The export as Unleash writes it: strategies in evaluation order, ``sortOrder`` null."""
    return write_answer(ExportFileAnswer.of(export))
