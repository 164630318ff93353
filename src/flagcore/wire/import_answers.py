"""The answers of Unleash's import validation and import, and of its context field list,
as typed values, each with its row of keys (`flagcore.wire.answer_table`)."""

from __future__ import annotations

from typing import Any

import attrs

from flagcore.entities import ContextField
from flagcore.wire.answer_table import AnswerField, answer
from flagcore.wire.unleash_export import ExportedContextField

__all__ = [
    "ContextFieldAnswer",
    "ImportCheckAnswer",
    "ImportItemAnswer",
    "ImportReportAnswer",
    "LegalValueAnswer",
]

# Unleash's default sort order of a context field that has none.
_DEFAULT_SORT_ORDER = 10


@answer(AnswerField("message", "message"), AnswerField("affected_items", "affectedItems"))
@attrs.frozen
class ImportItemAnswer:
    message: str
    affected_items: tuple[str, ...]


@answer(
    AnswerField("errors", "errors"),
    AnswerField("warnings", "warnings"),
    AnswerField("permissions", "permissions", schema={"maxItems": 0}),
)
@attrs.frozen
class ImportCheckAnswer:
    """``{"errors", "warnings", "permissions"}``; no per-permission checks here."""

    errors: tuple[ImportItemAnswer, ...]
    warnings: tuple[ImportItemAnswer, ...]
    permissions: tuple[Any, ...] = ()


@answer(
    AnswerField("project", "project"),
    AnswerField("environment", "environment"),
    AnswerField("dry_run", "dryRun"),
    AnswerField("created", "created"),
    AnswerField("updated", "updated"),
    AnswerField("unchanged", "unchanged"),
    AnswerField("tag_types_created", "tagTypesCreated"),
)
@attrs.frozen
class ImportReportAnswer:
    """What an import did (or, with ``dryRun``, would do), by flag name."""

    project: str
    environment: str
    dry_run: bool
    created: tuple[str, ...]
    updated: tuple[str, ...]
    unchanged: tuple[str, ...]
    tag_types_created: tuple[str, ...]


@answer(AnswerField("value", "value"), AnswerField("description", "description"))
@attrs.frozen
class LegalValueAnswer:
    value: str
    description: str | None


@answer(
    AnswerField("name", "name"),
    AnswerField("description", "description"),
    AnswerField("stickiness", "stickiness"),
    AnswerField("sort_order", "sortOrder"),
    AnswerField("legal_values", "legalValues"),
)
@attrs.frozen
class ContextFieldAnswer:
    """A context field as Unleash's ``GET /api/admin/context`` lists it."""

    name: str
    description: str
    stickiness: bool
    sort_order: int
    legal_values: tuple[LegalValueAnswer, ...]

    @classmethod
    def of(cls, field: ContextField | ExportedContextField) -> ContextFieldAnswer:
        return cls(
            field.name,
            field.description or "",
            field.stickiness,
            field.sort_order if field.sort_order is not None else _DEFAULT_SORT_ORDER,
            tuple(LegalValueAnswer(v.value, v.description) for v in field.legal_values),
        )
