"""The payload of each change-request action, as a typed value read from Unleash's JSON.

A change's payload is read by the same converter and the same model classes as the
direct route it stands for (a strategy as ``POST .../strategies`` reads it, variants as
``PUT .../variants``, ...), so a payload the direct route refuses is refused here, with
the JSON path of the change it sits in (``$[1].payload.constraints[0].operator``). What
is stored is the payload written back from its typed value: the JSON it was read from,
normalised, never something it was not.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from flagcore.change_requests import ChangeAction
from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.model import Constraint, Dependency, Strategy, Variant
from flagcore.wire.converter import converter as base_converter
from flagcore.wire.converter import register_class, structure_with
from flagcore.wire.fields import WIRE_NAMES

__all__ = [
    "EnabledPayload",
    "NoPayload",
    "SegmentIdPayload",
    "SegmentPayload",
    "StrategyIdPayload",
    "StrategyOrderPayload",
    "VariantsPayload",
    "payload_type",
    "read_payload",
    "rooted",
    "write_payload",
]


@attrs.frozen
class EnabledPayload:
    enabled: bool


@attrs.frozen
class StrategyIdPayload:
    """``deleteStrategy``: the strategy's id (Unleash also sends its name and a snapshot,
    which say nothing the id does not)."""

    id: str


@attrs.frozen
class StrategyOrderPayload:
    """One item of ``reorderStrategy`` (Unleash's ``setStrategySortOrderSchema``)."""

    id: str
    sort_order: int


@attrs.frozen
class VariantsPayload:
    variants: tuple[Variant, ...]


@attrs.frozen
class SegmentPayload:
    """``updateSegment``: the segment's id and its new name, description and constraints."""

    id: int
    name: str
    constraints: tuple[Constraint, ...]
    description: str | None = None
    project: str | None = None


@attrs.frozen
class SegmentIdPayload:
    """``deleteSegment``: the segment's id; its name is filled in when drafted (as
    Unleash answers it, and so the request still names it once it is deleted)."""

    id: int
    name: str | None = None


@attrs.frozen
class NoPayload:
    """``archiveFeature`` and ``deleteDependency`` need nothing but the flag's name."""


_NAMES: Mapping[type, Mapping[str, str]] = {
    EnabledPayload: {},
    StrategyIdPayload: {},
    StrategyOrderPayload: {"sort_order": "sortOrder"},
    VariantsPayload: {},
    SegmentPayload: {},
    SegmentIdPayload: {},
}
_ALL_NAMES: Mapping[type, Mapping[str, str]] = {**WIRE_NAMES, **_NAMES}

_PAYLOAD_TYPES: Mapping[ChangeAction, Any] = {
    ChangeAction.UPDATE_ENABLED: EnabledPayload,
    ChangeAction.ADD_STRATEGY: Strategy,
    ChangeAction.UPDATE_STRATEGY: Strategy,
    ChangeAction.DELETE_STRATEGY: StrategyIdPayload,
    ChangeAction.REORDER_STRATEGY: tuple[StrategyOrderPayload, ...],
    ChangeAction.PATCH_VARIANT: VariantsPayload,
    ChangeAction.ARCHIVE_FEATURE: NoPayload,
    ChangeAction.ADD_DEPENDENCY: Dependency,
    ChangeAction.DELETE_DEPENDENCY: NoPayload,
    ChangeAction.UPDATE_SEGMENT: SegmentPayload,
    ChangeAction.DELETE_SEGMENT: SegmentIdPayload,
}


def _payload_converter() -> Any:
    made = base_converter.copy()
    for cls, renames in _NAMES.items():
        register_class(made, cls, renames)
    return made


_CONVERTER = _payload_converter()


def payload_type(action: ChangeAction) -> Any:
    """The typed value ``action``'s payload is read as."""
    return _PAYLOAD_TYPES[action]


def read_payload(action: ChangeAction, data: Any, path: str = "$.payload") -> Any:
    """``data`` read as ``action``'s payload; `InvalidInput` with paths under ``path``."""
    kind = _PAYLOAD_TYPES[action]
    if kind is NoPayload:
        return NoPayload()
    if data is None:
        raise InvalidInput(
            f"the {action.value} change needs a payload",
            [ErrorDetail("required field missing", path)],
        )
    try:
        return structure_with(_CONVERTER, _ALL_NAMES, data, kind, "the payload")
    except InvalidInput as exc:
        raise rooted(exc, path) from exc


def rooted(exc: InvalidInput, path: str) -> InvalidInput:
    """``exc`` with each detail's path (``$...``) moved under ``path``."""
    details = [
        attrs.evolve(d, path=path + d.path[1:]) if d.path and d.path.startswith("$") else d
        for d in exc.details
    ]
    first = details[0].path if details else path
    message = exc.message.split(": ", 2)[-1] if exc.details else exc.message
    return InvalidInput(f"the payload could not be read: {first}: {message}", details)


def write_payload(action: ChangeAction, value: Any) -> Any:
    """The JSON a typed payload is stored and answered as (Unleash's keys)."""
    kind = _PAYLOAD_TYPES[action]
    if kind is NoPayload:
        return None
    return _CONVERTER.unstructure(value, kind)
