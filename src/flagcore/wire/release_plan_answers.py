"""Release templates and plans as Unleash's (enterprise) API shows them to its frontend
(``releasePlanTemplateSchema``, ``releasePlanSchema``, ``releasePlanMilestoneSchema``,
``releasePlanMilestoneStrategySchema``, ``releasePlanSafeguardSchema``), with
flagcore's own keys marked where it adds one (issue 32, docs/release-plans.md)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import attrs

from flagcore.model import Constraint, Strategy, Variant
from flagcore.release_plans import (
    ImpactPoint,
    Milestone,
    ReleasePlan,
    ReleasePlanTemplate,
    Safeguard,
)
from flagcore.wire.answer_table import AnswerField, answer

__all__ = [
    "ImpactPointAnswer",
    "MilestoneAnswer",
    "MilestoneStrategyAnswer",
    "ReleasePlanAnswer",
    "ReleasePlanTemplateAnswer",
    "SafeguardActionAnswer",
    "SafeguardAnswer",
    "SafeguardImpactMetricAnswer",
    "SafeguardTriggerAnswer",
    "TransitionConditionAnswer",
]

_TIME_RANGES = ((60, "hour"), (24 * 60, "day"))


@answer(
    AnswerField("id", "id"),
    AnswerField("milestone_id", "milestoneId"),
    AnswerField("sort_order", "sortOrder"),
    AnswerField("title", "title"),
    AnswerField("strategy_name", "strategyName"),
    AnswerField("name", "name"),
    AnswerField("parameters", "parameters"),
    AnswerField("constraints", "constraints"),
    AnswerField("variants", "variants"),
    AnswerField("segments", "segments"),
    AnswerField("disabled", "disabled"),
)
@attrs.frozen
class MilestoneStrategyAnswer:
    id: str | None
    milestone_id: str
    sort_order: int
    title: str | None
    strategy_name: str
    name: str
    parameters: Mapping[str, str]
    constraints: tuple[Constraint, ...]
    variants: tuple[Variant, ...]
    segments: tuple[int, ...]
    disabled: bool

    @classmethod
    def of(cls, strategy: Strategy, milestone_id: str) -> MilestoneStrategyAnswer:
        return cls(
            strategy.id,
            milestone_id,
            strategy.sort_order or 0,
            strategy.title,
            strategy.name,
            strategy.name,
            strategy.parameters,
            strategy.constraints,
            strategy.variants,
            strategy.segments,
            strategy.disabled,
        )


@answer(AnswerField("interval_minutes", "intervalMinutes"))
@attrs.frozen
class TransitionConditionAnswer:
    interval_minutes: int


@answer(
    AnswerField("id", "id"),
    AnswerField("name", "name"),
    AnswerField("sort_order", "sortOrder"),
    AnswerField("release_plan_definition_id", "releasePlanDefinitionId"),
    AnswerField("started_at", "startedAt"),
    AnswerField("paused_at", "pausedAt"),
    AnswerField("progression_executed_at", "progressionExecutedAt"),
    AnswerField("transition_condition", "transitionCondition"),
    AnswerField("strategies", "strategies"),
)
@attrs.frozen
class MilestoneAnswer:
    id: str
    name: str
    sort_order: int
    release_plan_definition_id: str
    started_at: dt.datetime | None
    paused_at: dt.datetime | None
    progression_executed_at: dt.datetime | None
    transition_condition: TransitionConditionAnswer | None
    strategies: tuple[MilestoneStrategyAnswer, ...]

    @classmethod
    def of(cls, milestone: Milestone, definition_id: str) -> MilestoneAnswer:
        minutes = milestone.transition_minutes
        return cls(
            milestone.id,
            milestone.name,
            milestone.sort_order,
            definition_id,
            milestone.started_at,
            milestone.paused_at,
            milestone.progression_executed_at,
            None if minutes is None else TransitionConditionAnswer(minutes),
            tuple(MilestoneStrategyAnswer.of(s, milestone.id) for s in milestone.strategies),
        )


@answer(
    AnswerField("id", "id"),
    AnswerField("discriminator", "discriminator"),
    AnswerField("name", "name"),
    AnswerField("description", "description"),
    AnswerField("created_by_user_id", "createdByUserId"),
    AnswerField("created_at", "createdAt"),
    AnswerField("archived_at", "archivedAt"),
    AnswerField("milestones", "milestones"),
)
@attrs.frozen
class ReleasePlanTemplateAnswer:
    id: str
    discriminator: str
    name: str
    description: str | None
    created_by_user_id: int
    created_at: dt.datetime
    archived_at: dt.datetime | None
    milestones: tuple[MilestoneAnswer, ...]

    @classmethod
    def of(cls, template: ReleasePlanTemplate) -> ReleasePlanTemplateAnswer:
        return cls(
            template.id,
            "template",
            template.name,
            template.description,
            template.created_by_user_id,
            template.created_at,
            template.archived_at,
            tuple(MilestoneAnswer.of(m, template.id) for m in template.milestones),
        )


@answer(AnswerField("id", "id"), AnswerField("type", "type"))
@attrs.frozen
class SafeguardActionAnswer:
    """``id``: the release plan the action applies to (Unleash's shape)."""

    id: str
    type: str


@answer(
    AnswerField("id", "id"),
    AnswerField("metric_name", "metricName"),
    AnswerField("aggregation_mode", "aggregationMode"),
    AnswerField("label_selectors", "labelSelectors"),
    AnswerField("time_range", "timeRange"),
    AnswerField("window_minutes", "windowMinutes"),
    AnswerField("ratio_of", "ratioOf", omitted_when_none=True),
)
@attrs.frozen
class SafeguardImpactMetricAnswer:
    """Unleash's impact metric choice; ``windowMinutes`` and ``ratioOf`` are flagcore's
    (the window the value is taken over, and the metric it is divided by)."""

    id: str
    metric_name: str
    aggregation_mode: str
    label_selectors: Mapping[str, str]
    time_range: str
    window_minutes: int
    ratio_of: str | None


@answer(AnswerField("operator", "operator"), AnswerField("threshold", "threshold"))
@attrs.frozen
class SafeguardTriggerAnswer:
    operator: str
    threshold: float


@answer(
    AnswerField("id", "id"),
    AnswerField("action", "action"),
    AnswerField("impact_metric", "impactMetric"),
    AnswerField("trigger_condition", "triggerCondition"),
)
@attrs.frozen
class SafeguardAnswer:
    id: str
    action: SafeguardActionAnswer
    impact_metric: SafeguardImpactMetricAnswer
    trigger_condition: SafeguardTriggerAnswer

    @classmethod
    def of(cls, safeguard: Safeguard, plan_id: str) -> SafeguardAnswer:
        time_range = next(
            (name for minutes, name in _TIME_RANGES if safeguard.window_minutes <= minutes),
            "day",
        )
        return cls(
            safeguard.id,
            SafeguardActionAnswer(plan_id, safeguard.action.value),
            SafeguardImpactMetricAnswer(
                safeguard.id,
                safeguard.metric_name,
                safeguard.aggregation_mode,
                {},
                time_range,
                safeguard.window_minutes,
                safeguard.ratio_of,
            ),
            SafeguardTriggerAnswer(safeguard.operator.value, safeguard.threshold),
        )


@answer(
    AnswerField("id", "id"),
    AnswerField("discriminator", "discriminator"),
    AnswerField("name", "name"),
    AnswerField("description", "description"),
    AnswerField("feature_name", "featureName"),
    AnswerField("environment", "environment"),
    AnswerField("created_by_user_id", "createdByUserId"),
    AnswerField("created_at", "createdAt"),
    AnswerField("active_milestone_id", "activeMilestoneId"),
    AnswerField("release_plan_template_id", "releasePlanTemplateId"),
    AnswerField("milestones", "milestones"),
    AnswerField("safeguards", "safeguards"),
    AnswerField("paused_reason", "pausedReason", omitted_when_none=True),
)
@attrs.frozen
class ReleasePlanAnswer:
    """Unleash's ``releasePlanSchema``; ``pausedReason`` is flagcore's: why a safeguard
    paused the plan."""

    id: str
    discriminator: str
    name: str
    description: str | None
    feature_name: str
    environment: str
    created_by_user_id: int
    created_at: dt.datetime
    active_milestone_id: str | None
    release_plan_template_id: str
    milestones: tuple[MilestoneAnswer, ...]
    safeguards: tuple[SafeguardAnswer, ...]
    paused_reason: str | None

    @classmethod
    def of(cls, plan: ReleasePlan) -> ReleasePlanAnswer:
        return cls(
            plan.id,
            "plan",
            plan.name,
            plan.description,
            plan.flag,
            plan.environment,
            plan.created_by_user_id,
            plan.created_at,
            plan.active_milestone_id,
            plan.template_id,
            tuple(MilestoneAnswer.of(m, plan.id) for m in plan.milestones),
            tuple(SafeguardAnswer.of(s, plan.id) for s in plan.safeguards),
            plan.paused_reason,
        )


@answer(
    AnswerField("minute", "minute"),
    AnswerField("value", "value"),
    AnswerField("count", "count"),
    AnswerField("buckets", "buckets"),
)
@attrs.frozen
class ImpactPointAnswer:
    """One minute of an impact metric (flagcore's own shape): a counter's increments
    summed, a gauge's last value, or a histogram's sum, count and cumulative buckets."""

    minute: dt.datetime
    value: float
    count: int
    buckets: Mapping[str, int]

    @classmethod
    def of(cls, point: ImpactPoint) -> ImpactPointAnswer:
        return cls(point.minute, point.value, point.count, point.buckets)
