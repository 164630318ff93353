"""The one table between the model and Unleash's JSON: each class's fields and their keys.

Every reader and writer of Unleash's JSON is built from `FIELDS`: the cattrs converter
(`flagcore.wire.converter`), the fast reader (`flagcore.wire.reading`) and the fast writer
(`flagcore.wire.writing`). Adding a field to a model class is one row here (the model
keeps the attribute and its default, which is also the JSON default: what a missing key
or a null means). The compiler and the variant picker read Unleash's JSON directly and
use the key constants below, bound at import time, so a name is spelled once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from flagcore.model import (
    Constraint,
    Dependency,
    Flag,
    Override,
    Payload,
    Segment,
    Strategy,
    Variant,
)

__all__ = [
    "CASE_INSENSITIVE",
    "CLIENT_HIDDEN_STRATEGY_KEYS",
    "CONSTRAINTS",
    "CONTEXT_NAME",
    "DEPENDENCIES",
    "DESCRIPTION",
    "DISABLED",
    "ENABLED",
    "FEATURE",
    "FIELDS",
    "ID",
    "IMPRESSION_DATA",
    "INVERTED",
    "NAME",
    "OPERATOR",
    "OVERRIDES",
    "PARAMETERS",
    "PARAMETER_GROUP_ID",
    "PARAMETER_STICKINESS",
    "PAYLOAD",
    "PROJECT",
    "SEGMENTS",
    "SORT_ORDER",
    "STALE",
    "STICKINESS",
    "STRATEGIES",
    "STRATEGY",
    "TITLE",
    "TYPE",
    "VALUE",
    "VALUES",
    "VARIANTS",
    "WEIGHT",
    "WEIGHT_TYPE",
    "WIRE_NAMES",
    "WireField",
    "wire_name",
]

# Unleash's JSON keys, one constant each.
NAME = "name"
ENABLED = "enabled"
TYPE = "type"
DESCRIPTION = "description"
PROJECT = "project"
STALE = "stale"
IMPRESSION_DATA = "impressionData"
STRATEGIES = "strategies"
VARIANTS = "variants"
DEPENDENCIES = "dependencies"
PARAMETERS = "parameters"
CONSTRAINTS = "constraints"
SEGMENTS = "segments"
DISABLED = "disabled"
ID = "id"
TITLE = "title"
SORT_ORDER = "sortOrder"
CONTEXT_NAME = "contextName"
OPERATOR = "operator"
VALUES = "values"
VALUE = "value"
INVERTED = "inverted"
CASE_INSENSITIVE = "caseInsensitive"
WEIGHT = "weight"
WEIGHT_TYPE = "weightType"
STICKINESS = "stickiness"
PAYLOAD = "payload"
OVERRIDES = "overrides"
FEATURE = "feature"

# Format 1's legacy keys on a flag (Unleash's first client API, kept "until version 2 of
# the format"): the first strategy's name, and its parameters under ``PARAMETERS``.
STRATEGY = "strategy"

# Strategy parameters the variant picker reads (Unleash's names inside ``parameters``).
PARAMETER_GROUP_ID = "groupId"
PARAMETER_STICKINESS = "stickiness"

# A strategy as SDKs see it leaves out these admin-only keys, as Unleash does.
CLIENT_HIDDEN_STRATEGY_KEYS = (ID, TITLE, SORT_ORDER, DISABLED)


@attrs.frozen
class WireField:
    """One attribute of a model class and the JSON key it travels under.

    ``default`` is the model's (`attrs.NOTHING` for a required field): what a missing key
    means, and, as Unleash sends null for fields left at their default, what null means.
    """

    attribute: str
    key: str
    default: Any = attrs.NOTHING

    @property
    def required(self) -> bool:
        return self.default is attrs.NOTHING


def _table(cls: type, *rows: tuple[str, str]) -> tuple[WireField, ...]:
    """``cls``'s rows, checked against the model: every attribute once, in its order (the
    order of the keys in the JSON written), so a field added to the model and not here
    fails at import rather than going missing on the wire."""
    model_fields = attrs.fields(cls)
    attributes = tuple(attribute for attribute, _key in rows)
    if attributes != tuple(field.name for field in model_fields):
        raise TypeError(f"the wire table of {cls.__name__} does not match its attributes")
    out = []
    for (attribute, key), field in zip(rows, model_fields, strict=True):
        default = field.default
        if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            default = default.factory()
        out.append(WireField(attribute, key, default))
    return tuple(out)


FIELDS: Mapping[type, tuple[WireField, ...]] = {
    Constraint: _table(
        Constraint,
        ("context_name", CONTEXT_NAME),
        ("operator", OPERATOR),
        ("values", VALUES),
        ("value", VALUE),
        ("inverted", INVERTED),
        ("case_insensitive", CASE_INSENSITIVE),
    ),
    Segment: _table(
        Segment,
        ("id", ID),
        ("name", NAME),
        ("constraints", CONSTRAINTS),
        ("description", DESCRIPTION),
        ("project", PROJECT),
    ),
    Payload: _table(Payload, ("type", TYPE), ("value", VALUE)),
    Override: _table(Override, ("context_name", CONTEXT_NAME), ("values", VALUES)),
    Variant: _table(
        Variant,
        ("name", NAME),
        ("weight", WEIGHT),
        ("weight_type", WEIGHT_TYPE),
        ("stickiness", STICKINESS),
        ("payload", PAYLOAD),
        ("overrides", OVERRIDES),
    ),
    Strategy: _table(
        Strategy,
        ("name", NAME),
        ("parameters", PARAMETERS),
        ("constraints", CONSTRAINTS),
        ("segments", SEGMENTS),
        ("variants", VARIANTS),
        ("disabled", DISABLED),
        ("id", ID),
        ("title", TITLE),
        ("sort_order", SORT_ORDER),
    ),
    Dependency: _table(
        Dependency, ("feature", FEATURE), ("enabled", ENABLED), ("variants", VARIANTS)
    ),
    Flag: _table(
        Flag,
        ("name", NAME),
        ("enabled", ENABLED),
        ("type", TYPE),
        ("description", DESCRIPTION),
        ("project", PROJECT),
        ("stale", STALE),
        ("impression_data", IMPRESSION_DATA),
        ("strategies", STRATEGIES),
        ("variants", VARIANTS),
        ("dependencies", DEPENDENCIES),
    ),
}

# attribute → key, for the attributes whose key differs (what cattrs needs to rename).
WIRE_NAMES: Mapping[type, Mapping[str, str]] = {
    cls: {f.attribute: f.key for f in fields if f.key != f.attribute}
    for cls, fields in FIELDS.items()
}


def wire_name(cls: type, attribute: str) -> str:
    """The JSON key under which ``cls``'s ``attribute`` travels (``contextName``)."""
    return WIRE_NAMES.get(cls, {}).get(attribute, attribute)
