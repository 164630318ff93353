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
    "MilestoneIdPayload",
    "NoPayload",
    "PlanIdPayload",
    "ProgressionPayload",
    "SafeguardActionPayload",
    "SafeguardChangePayload",
    "SafeguardIdPayload",
    "SafeguardMetricPayload",
    "SafeguardPayload",
    "SafeguardTriggerPayload",
    "SegmentIdPayload",
    "SegmentPayload",
    "SourceMilestonePayload",
    "StrategyIdPayload",
    "StrategyOrderPayload",
    "TemplateIdPayload",
    "TransitionPayload",
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
class TemplateIdPayload:
    """``addReleasePlan``: the release template to apply."""

    template_id: str


@attrs.frozen
class PlanIdPayload:
    """``deleteReleasePlan`` and ``resumeMilestoneProgression``: the plan (Unleash also
    sends a snapshot of it, which the plan's own id says)."""

    plan_id: str


@attrs.frozen
class MilestoneIdPayload:
    """``startMilestone``: the milestone to start (its plan is the one holding it)."""

    milestone_id: str


@attrs.frozen
class TransitionPayload:
    interval_minutes: int


@attrs.frozen
class ProgressionPayload:
    """``changeMilestoneProgression``: the source milestone is followed by the target
    after ``transitionCondition.intervalMinutes``."""

    source_milestone: str
    target_milestone: str
    transition_condition: TransitionPayload


@attrs.frozen
class SourceMilestonePayload:
    """``deleteMilestoneProgression``: the milestone whose progression goes."""

    source_milestone: str


@attrs.frozen
class SafeguardMetricPayload:
    """A safeguard's ``impactMetric`` (Unleash's, with flagcore's ``windowMinutes`` and
    ``ratioOf``): checked by the service's safeguard rules when drafted and applied."""

    metric_name: str
    aggregation_mode: str
    time_range: str | None = None
    window_minutes: int | None = None
    ratio_of: str | None = None


@attrs.frozen
class SafeguardTriggerPayload:
    operator: str
    threshold: float


@attrs.frozen
class SafeguardActionPayload:
    type: str


@attrs.frozen
class SafeguardPayload:
    impact_metric: SafeguardMetricPayload
    trigger_condition: SafeguardTriggerPayload
    action: SafeguardActionPayload | None = None


@attrs.frozen
class SafeguardChangePayload:
    """``changeReleasePlanSafeguard``: the plan's safeguard, made or replaced."""

    plan_id: str
    safeguard: SafeguardPayload


@attrs.frozen
class SafeguardIdPayload:
    """``deleteReleasePlanSafeguard``."""

    plan_id: str
    safeguard_id: str


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
    TemplateIdPayload: {"template_id": "templateId"},
    PlanIdPayload: {"plan_id": "planId"},
    MilestoneIdPayload: {"milestone_id": "milestoneId"},
    TransitionPayload: {"interval_minutes": "intervalMinutes"},
    ProgressionPayload: {
        "source_milestone": "sourceMilestone",
        "target_milestone": "targetMilestone",
        "transition_condition": "transitionCondition",
    },
    SourceMilestonePayload: {"source_milestone": "sourceMilestone"},
    SafeguardMetricPayload: {
        "metric_name": "metricName",
        "aggregation_mode": "aggregationMode",
        "time_range": "timeRange",
        "window_minutes": "windowMinutes",
        "ratio_of": "ratioOf",
    },
    SafeguardTriggerPayload: {},
    SafeguardActionPayload: {},
    SafeguardPayload: {"impact_metric": "impactMetric", "trigger_condition": "triggerCondition"},
    SafeguardChangePayload: {"plan_id": "planId"},
    SafeguardIdPayload: {"plan_id": "planId", "safeguard_id": "safeguardId"},
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
    ChangeAction.ADD_RELEASE_PLAN: TemplateIdPayload,
    ChangeAction.DELETE_RELEASE_PLAN: PlanIdPayload,
    ChangeAction.START_MILESTONE: MilestoneIdPayload,
    ChangeAction.CHANGE_MILESTONE_PROGRESSION: ProgressionPayload,
    ChangeAction.DELETE_MILESTONE_PROGRESSION: SourceMilestonePayload,
    ChangeAction.RESUME_MILESTONE_PROGRESSION: PlanIdPayload,
    ChangeAction.CHANGE_SAFEGUARD: SafeguardChangePayload,
    ChangeAction.DELETE_SAFEGUARD: SafeguardIdPayload,
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
