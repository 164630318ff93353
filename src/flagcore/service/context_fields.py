"""The context-field registry: what people know about the fields rules name.

Unleash seeds its built-in fields as rows people may edit or delete. Here the built-ins
always exist (every SDK sends them, the evaluation knows them): editing one keeps a row
that overrides it, and deleting one is refused. Describing a field restricts nothing at
evaluation; a constraint may name any field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

import attrs

from flagcore.entities import ContextField, LegalValue
from flagcore.errors import Conflict, ErrorDetail, InvalidInput, NameConflict, NotFound
from flagcore.ports import KeptWrite, Records, SegmentRepository, StrategyRepository
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.tables import CONTEXT_FIELDS
from flagcore.validation import check_name, check_sort_order, check_text
from flagcore.wire.event_data import ContextFieldData

__all__ = [
    "BUILT_IN_CONTEXT_FIELDS",
    "MAX_DESCRIPTION_LENGTH",
    "MAX_LEGAL_VALUES",
    "MAX_LEGAL_VALUE_LENGTH",
    "ContextFields",
    "checked_context_field",
    "constraint_users",
    "create_context_field_in",
    "found_context_field",
    "legal_values_by_field",
    "listed",
]

# Unleash's seeded fields with its descriptions and sort orders; remoteAddress is not
# seeded by Unleash but is a field of every SDK's context, so it is listed too.
BUILT_IN_CONTEXT_FIELDS: Mapping[str, ContextField] = {
    f.name: f
    for f in (
        ContextField(
            "environment", "Allows you to constrain on application environment", (), False, 0
        ),
        ContextField("userId", "Allows you to constrain on userId", (), False, 1),
        ContextField("appName", "Allows you to constrain on application name", (), False, 2),
        ContextField("currentTime", "Allows you to constrain on date values", (), False, 3),
        ContextField("sessionId", "Allows you to constrain on sessionId", (), True, 4),
        ContextField("remoteAddress", "Allows you to constrain on remoteAddress", (), False, 5),
    )
}

MAX_DESCRIPTION_LENGTH = 250  # Unleash's bound on a field's description
MAX_LEGAL_VALUE_LENGTH = 100  # Unleash's bound on a legal value
MAX_LEGAL_VALUES = 1_000  # ours: Unleash has none; a select past this helps nobody


def checked_context_field(field: ContextField, path: str = "$") -> ContextField:
    """``field`` if every part of it is within bounds, else `InvalidInput` naming each
    offending part by its JSON path under ``path``."""
    check_name(field.name, "context field", f"{path}.name")
    _check_description(field.description, f"{path}.description", MAX_DESCRIPTION_LENGTH)
    check_sort_order(field.sort_order, f"{path}.sortOrder")
    if len(field.legal_values) > MAX_LEGAL_VALUES:
        raise InvalidInput(
            f"a context field has at most {MAX_LEGAL_VALUES} legal values",
            [ErrorDetail(f"at most {MAX_LEGAL_VALUES} items", f"{path}.legalValues")],
        )
    problems: list[ErrorDetail] = []
    seen: set[str] = set()
    for index, legal in enumerate(field.legal_values):
        at = f"{path}.legalValues[{index}]"
        if not 1 <= len(legal.value) <= MAX_LEGAL_VALUE_LENGTH:
            problems.append(ErrorDetail(f"1 to {MAX_LEGAL_VALUE_LENGTH} characters", f"{at}.value"))
        elif legal.value in seen:
            problems.append(ErrorDetail(f'"{legal.value}" is listed twice', f"{at}.value"))
        seen.add(legal.value)
        if legal.description is not None and len(legal.description) > MAX_DESCRIPTION_LENGTH:
            problems.append(
                ErrorDetail(f"at most {MAX_DESCRIPTION_LENGTH} characters", f"{at}.description")
            )
    if problems:
        raise InvalidInput(f"{len(problems)} legal value(s) refused", problems)
    for index, legal in enumerate(field.legal_values):
        check_text(legal.value, f"{path}.legalValues[{index}].value", optional=False)
        check_text(legal.description, f"{path}.legalValues[{index}].description")
    return field


def _check_description(value: str | None, path: str, bound: int) -> None:
    check_text(value, path)
    if value is not None and len(value) > bound:
        raise InvalidInput(
            f"{path} is longer than {bound} characters",
            [ErrorDetail(f"at most {bound} characters", path)],
        )


class _ConstraintUsers(StrategyRepository, SegmentRepository, Protocol):
    """Where constraints are: strategies and segments."""


class ContextFields:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def list_context_fields(self) -> list[ContextField]:
        """The built-in fields (as edited, if they were) and the stored ones, by sort
        order then name, as Unleash lists them."""
        with self._context.read() as tx:
            return listed(tx)

    def get_context_field(self, name: str) -> ContextField:
        with self._context.read() as tx:
            return _required(tx, name)

    def validate_name(self, name: str) -> None:
        """`NameConflict` unless ``name`` is a good name no field has (Unleash's
        ``POST /api/admin/context/validate``)."""
        check_name(name, "context field")
        with self._context.read() as tx:
            _require_free(tx, name)

    def create_context_field(self, field: ContextField, *, actor: Actor = SYSTEM) -> ContextField:
        actor = authorize(actor, "create_context_field")
        field = checked_context_field(field)
        with self._context.unit() as tx:
            _require_free(tx, field.name)
            return create_context_field_in(self._context, tx, field, actor=actor)

    def update_context_field(
        self,
        name: str,
        *,
        description: str | None,
        legal_values: tuple[LegalValue, ...],
        stickiness: bool,
        sort_order: int | None = None,
        actor: Actor = SYSTEM,
    ) -> ContextField:
        """Replace a field's description, legal values and stickiness, and its sort order
        when given (its name and creation time stay). A built-in field edited is kept."""
        actor = authorize(actor, "update_context_field")
        with self._context.unit() as tx:
            before = _required(tx, name)
            field = ContextField(
                name,
                description,
                legal_values,
                stickiness,
                before.sort_order if sort_order is None else sort_order,
                before.created_at,
            )
            checked_context_field(field)
            tx.save_record(CONTEXT_FIELDS, field)
            self._context.record_event(
                tx,
                "context-field-updated",
                actor,
                data=ContextFieldData.of(field),
                pre_data=ContextFieldData.of(before),
            )
        return field

    def delete_context_field(self, name: str, *, actor: Actor = SYSTEM) -> None:
        """Refused (`Conflict`) for a built-in field and while any strategy's or segment's
        constraint names the field: each user is named in the details."""
        actor = authorize(actor, "delete_context_field")
        with self._context.unit() as tx:
            before = _required(tx, name)
            if name in BUILT_IN_CONTEXT_FIELDS:
                raise Conflict(
                    f'"{name}" is a built-in context field: it can be edited, not deleted',
                    [ErrorDetail(f'built-in field "{name}"')],
                )
            users = constraint_users(tx, name)
            if users:
                raise Conflict(
                    f'context field "{name}" is used by {len(users)} constraint owner(s); '
                    "remove those constraints first",
                    [ErrorDetail(user) for user in users[:20]],
                )
            tx.delete_record(CONTEXT_FIELDS, name)
            self._context.record_event(
                tx, "context-field-deleted", actor, pre_data=ContextFieldData.of(before)
            )


def create_context_field_in(
    context: ServiceContext, tx: KeptWrite, field: ContextField, *, actor: str
) -> ContextField:
    """Store a checked field whose name is free, with its event, inside the caller's
    unit of work (creating one, or an import)."""
    field = attrs.evolve(field, created_at=context.clock())
    tx.save_record(CONTEXT_FIELDS, field)
    context.record_event(tx, "context-field-created", actor, data=ContextFieldData.of(field))
    return field


def listed(tx: Records) -> list[ContextField]:
    """Every field, built-in or stored, by sort order then name."""
    stored = {f.name: f for f in tx.list_records(CONTEXT_FIELDS)}
    every = {**BUILT_IN_CONTEXT_FIELDS, **stored}
    return sorted(every.values(), key=lambda f: (f.sort_order, f.name))


def constraint_users(tx: _ConstraintUsers, name: str) -> list[str]:
    """Where a constraint names field ``name``: each strategy (flag, environment, id)
    and each segment, in words a person can act on."""
    users = [
        f'flag "{p.flag}" in environment "{p.environment}" (strategy {p.strategy.id})'
        for p in tx.list_strategies()
        if any(c.context_name == name for c in p.strategy.constraints)
    ]
    users.extend(
        f'segment "{s.name}" (id {s.id})'
        for s in tx.list_segments()
        if any(c.context_name == name for c in s.constraints)
    )
    return users


def found_context_field(tx: Records, name: str) -> ContextField | None:
    stored = tx.get_record(CONTEXT_FIELDS, name)
    return stored if stored is not None else BUILT_IN_CONTEXT_FIELDS.get(name)


def _required(tx: Records, name: str) -> ContextField:
    found = found_context_field(tx, name)
    if found is None:
        raise NotFound(f'there is no context field "{name}"')
    return found


def _require_free(tx: Records, name: str) -> None:
    if found_context_field(tx, name) is not None:
        raise NameConflict(f'a context field named "{name}" already exists')


def legal_values_by_field(fields: Iterable[ContextField]) -> dict[str, tuple[LegalValue, ...]]:
    """The legal values of each field that has some (the constraint editor's selects)."""
    return {f.name: f.legal_values for f in fields if f.legal_values}
