"""Unleash's feature export format, read and written: the file its UI's "export" and
``POST /api/admin/features-batch/export`` produce, and its import takes.

An export is flat lists keyed by flag name (``featureStrategies``, ``featureEnvironments``,
``featureTags`` ...) describing the flags of ONE environment. Strategies are listed in
evaluation order with ``sortOrder`` null or missing; segments appear by ``{id, name}``
only (no constraints), and strategies refer to the exporting server's segment ids.

Writing is `flagcore.wire.export_answers`' (answer-table rows). Reading is strict, like
every reader of Unleash's JSON here: a wrong type anywhere refuses
the whole file with the JSON path of each problem (`read_export`). The keys the model
classes share with the client format (a strategy's, a variant's, a constraint's) come from
`flagcore.wire.fields.FIELDS`; the keys only this format has are the constants below.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from flagcore.entities import LegalValue
from flagcore.model import Constraint, Dependency, Strategy, Variant
from flagcore.wire.converter import converter as _core_converter
from flagcore.wire.converter import register_class, structure_with
from flagcore.wire.fields import (
    IMPRESSION_DATA,
    SORT_ORDER,
    WIRE_NAMES,
)

__all__ = [
    "EXPORT_NAMES",
    "ExportedContextField",
    "ExportedDependencies",
    "ExportedEnvironment",
    "ExportedFlag",
    "ExportedSegment",
    "ExportedStrategy",
    "ExportedTag",
    "ExportedTagType",
    "FeatureExport",
    "LegalValue",
    "read_export",
    "structure_export",
]

# Keys only the export format has.
FEATURE_NAME = "featureName"
ENVIRONMENT = "environment"
ARCHIVED = "archived"
TAG_TYPE = "tagType"
TAG_VALUE = "tagValue"
LEGAL_VALUES = "legalValues"
COLOR = "color"
ICON = "icon"
FEATURES = "features"
FEATURE_STRATEGIES = "featureStrategies"
FEATURE_ENVIRONMENTS = "featureEnvironments"
CONTEXT_FIELDS = "contextFields"
FEATURE_TAGS = "featureTags"
TAG_TYPES = "tagTypes"
LINKS = "links"


@attrs.frozen
class ExportedFlag:
    """A flag's metadata (``features[i]``); ``project`` is where it lived on the exporter."""

    name: str
    type: str = "release"
    description: str | None = None
    project: str | None = None
    stale: bool = False
    impression_data: bool = False
    archived: bool = False


@attrs.frozen
class ExportedStrategy:
    """``featureStrategies[i]``: a strategy and the flag it belongs to. ``segments`` are the
    exporting server's segment ids (see `FeatureExport.segments` for their names)."""

    feature_name: str
    name: str
    parameters: Mapping[str, str] = attrs.field(factory=dict, hash=False)
    constraints: tuple[Constraint, ...] = ()
    segments: tuple[int, ...] = ()
    variants: tuple[Variant, ...] = ()
    disabled: bool = False
    id: str | None = None
    title: str | None = None
    sort_order: int | None = None

    def strategy(self, segments: tuple[int, ...]) -> Strategy:
        """The strategy, with ``segments`` (ids of the importing store) instead."""
        return Strategy(
            self.name,
            dict(self.parameters),
            self.constraints,
            segments,
            self.variants,
            self.disabled,
            self.id,
            self.title,
            self.sort_order,
        )


@attrs.frozen
class ExportedEnvironment:
    """``featureEnvironments[i]``: whether the flag is on in the exported environment, and
    its flag-level variants there."""

    feature_name: str
    enabled: bool = False
    environment: str | None = None
    variants: tuple[Variant, ...] = ()


@attrs.frozen
class ExportedTag:
    """``featureTags[i]``: one tag on one flag."""

    feature_name: str
    tag_type: str
    tag_value: str


@attrs.frozen
class ExportedTagType:
    """``tagTypes[i]``: a tag type the tags use (``color`` and ``icon`` are Unleash's)."""

    name: str
    description: str | None = None
    color: str | None = None
    icon: str | None = None


@attrs.frozen
class ExportedContextField:
    """A context field definition: an import keeps the new ones in the registry
    (`flagcore.service.context_fields`); an export writes one for each field its flags
    use, so Unleash's import finds them."""

    name: str
    description: str | None = None
    legal_values: tuple[LegalValue, ...] = ()
    stickiness: bool = False
    sort_order: int | None = None


@attrs.frozen
class ExportedSegment:
    """A segment as the export names it: the exporter's id and its name, no constraints."""

    id: int
    name: str


@attrs.frozen
class ExportedDependencies:
    """``dependencies[i]``: the parents of one flag."""

    feature: str
    dependencies: tuple[Dependency, ...] = ()


@attrs.frozen
class FeatureExport:
    """A whole export, in the file's order (strategies' order is their evaluation order)."""

    features: tuple[ExportedFlag, ...]
    feature_strategies: tuple[ExportedStrategy, ...] = ()
    feature_environments: tuple[ExportedEnvironment, ...] = ()
    context_fields: tuple[ExportedContextField, ...] = ()
    feature_tags: tuple[ExportedTag, ...] = ()
    segments: tuple[ExportedSegment, ...] = ()
    tag_types: tuple[ExportedTagType, ...] = ()
    dependencies: tuple[ExportedDependencies, ...] = ()


def _strategy_renames() -> dict[str, str]:
    return {**WIRE_NAMES[Strategy], "feature_name": FEATURE_NAME}


_NAMES: dict[type, Mapping[str, str]] = {
    **WIRE_NAMES,
    ExportedFlag: {"impression_data": IMPRESSION_DATA},
    ExportedStrategy: _strategy_renames(),
    ExportedEnvironment: {"feature_name": FEATURE_NAME},
    ExportedTag: {"feature_name": FEATURE_NAME, "tag_type": TAG_TYPE, "tag_value": TAG_VALUE},
    ExportedTagType: {},
    LegalValue: {},
    ExportedContextField: {"legal_values": LEGAL_VALUES, "sort_order": SORT_ORDER},
    ExportedSegment: {},
    ExportedDependencies: {},
    FeatureExport: {
        "feature_strategies": FEATURE_STRATEGIES,
        "feature_environments": FEATURE_ENVIRONMENTS,
        "context_fields": CONTEXT_FIELDS,
        "feature_tags": FEATURE_TAGS,
        "tag_types": TAG_TYPES,
    },
}

# The key table the reader is built from, public so the API's contract derives the schema
# of what an import reads from it (`flagcore.wire.SchemaSet`; branch contracts).
EXPORT_NAMES: Mapping[type, Mapping[str, str]] = _NAMES


def _export_converter() -> Any:
    made = _core_converter.copy()
    # Inner classes first: a class's hook is built from its fields' hooks.
    for cls in (
        ExportedFlag,
        ExportedStrategy,
        ExportedEnvironment,
        ExportedTag,
        ExportedTagType,
        LegalValue,
        ExportedContextField,
        ExportedSegment,
        ExportedDependencies,
        FeatureExport,
    ):
        register_class(made, cls, _NAMES[cls])
    return made


_CONVERTER = _export_converter()


def structure_export(data: Any, _type: Any = FeatureExport) -> FeatureExport:
    """`read_export` as a converter's hook, for a body that holds an export under a key of
    its own (an import's ``data``): cattrs's errors, which that converter's reader roots
    under the key (``$.data.features[0].name``)."""
    read: FeatureExport = _CONVERTER.structure(data, FeatureExport)
    return read


def read_export(data: Any, what: str = "the export") -> FeatureExport:
    """``data`` (parsed JSON) as an export, or `flagcore.errors.InvalidInput` whose details
    name the JSON path of every problem (``$.featureStrategies[3].constraints[0].values``)."""
    return structure_with(_CONVERTER, _NAMES, data, FeatureExport, what)
