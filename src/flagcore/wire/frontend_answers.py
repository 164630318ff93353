"""The Frontend API's and OFREP's answers as typed values, each with its row of keys.

The Frontend API's hot path writes text, not values: a view writes each flag's fixed part
and each variant once with these classes' writers and joins the pieces per request
(`flagcore.service.frontend`), so the keys still come from these rows only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from flagcore.errors import ErrorDetail
from flagcore.wire.answer_table import AnswerField, answer

if TYPE_CHECKING:  # flagcore.variants reads the wire's keys: no import back at run time
    from flagcore.variants import VariantResult

__all__ = [
    "FrontendToggle",
    "FrontendToggles",
    "FrontendVariant",
    "OfrepErrorAnswer",
    "OfrepEvaluation",
    "OfrepFlags",
    "OfrepMetadata",
    "OfrepParseFailure",
]


@answer(
    AnswerField("name", "name"),
    AnswerField("enabled", "enabled"),
    AnswerField("payload", "payload", omitted_when_none=True),
    AnswerField("feature_enabled", "feature_enabled"),
    AnswerField("feature_enabled_camel", "featureEnabled"),
)
@attrs.frozen
class FrontendVariant:
    """Unleash's frontend variant: ``featureEnabled`` in both spellings Unleash sends."""

    name: str
    enabled: bool
    payload: Mapping[str, str] | None
    feature_enabled: bool
    feature_enabled_camel: bool

    @classmethod
    def of(cls, result: VariantResult) -> FrontendVariant:
        on = result.feature_enabled
        return cls(result.name, result.enabled, result.payload, on, on)


@answer(
    AnswerField("name", "name"),
    AnswerField("enabled", "enabled"),
    AnswerField("impression_data", "impressionData"),
    AnswerField("variant", "variant"),
)
@attrs.frozen
class FrontendToggle:
    """One flag on for the context (the Frontend API lists only those)."""

    name: str
    enabled: bool
    impression_data: bool
    variant: FrontendVariant


@answer(AnswerField("toggles", "toggles"))
@attrs.frozen
class FrontendToggles:
    toggles: tuple[FrontendToggle, ...]


@answer(AnswerField("project", "project"), AnswerField("feature_enabled", "featureEnabled"))
@attrs.frozen
class OfrepMetadata:
    project: str
    feature_enabled: bool


@answer(*(AnswerField(name, name) for name in ("key", "value", "reason", "variant", "metadata")))
@attrs.frozen
class OfrepEvaluation:
    """One flag resolved: the value (typed payload, variant name, or on/off), why, and
    which variant."""

    key: str
    value: Any
    reason: str
    variant: str
    metadata: OfrepMetadata


@answer(
    AnswerField("key", "key"),
    AnswerField("error_code", "errorCode"),
    AnswerField("error_details", "errorDetails"),
)
@attrs.frozen
class OfrepParseFailure:
    """A flag whose variant payload cannot be read as its declared type."""

    key: str
    error_code: str
    error_details: str


@answer(AnswerField("flags", "flags"))
@attrs.frozen
class OfrepFlags:
    flags: tuple[OfrepEvaluation | OfrepParseFailure, ...]


@answer(
    AnswerField("error_code", "errorCode"),
    AnswerField("error_details", "errorDetails"),
    AnswerField("name", "name"),
    AnswerField("message", "message"),
    AnswerField("details", "details", schema={"minItems": 1}),
    AnswerField("key", "key", omitted_when_none=True),
)
@attrs.frozen
class OfrepErrorAnswer:
    """OFREP's failure fields and ours (the shape of every other error)."""

    error_code: str
    error_details: str
    name: str
    message: str
    details: tuple[ErrorDetail, ...]
    key: str | None = None

    @classmethod
    def of(
        cls,
        code: str,
        name: str,
        message: str,
        details: tuple[ErrorDetail, ...],
        key: str | None,
    ) -> OfrepErrorAnswer:
        shown = tuple(d if d.path else ErrorDetail(d.message) for d in details)
        return cls(code, message, name, message, shown or (ErrorDetail(message),), key)
