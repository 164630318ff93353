"""The rules release templates, plans and safeguards share (issue 32): names, a
progression's minutes, a safeguard as typed, each refusal at its JSON path; pure."""

from __future__ import annotations

import math

import attrs

from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput, NotFound
from flagcore.principals import Principal
from flagcore.release_plans import SYSTEM_USER_ID, Safeguard, SafeguardAction, SafeguardOperator
from flagcore.service.context import Actor
from flagcore.validation import MAX_NAME_LENGTH, check_text

__all__ = [
    "AGGREGATION_MODES",
    "MAX_TRANSITION_MINUTES",
    "MAX_WINDOW_MINUTES",
    "TIME_RANGES",
    "check_transition",
    "checked_name",
    "checked_safeguard",
    "rooted",
    "user_id_of",
]

MAX_TRANSITION_MINUTES = 366 * 24 * 60  # a year: longer is a plan nobody is watching


def user_id_of(actor: Actor) -> int:
    if isinstance(actor, Principal) and actor.user_id is not None:
        return actor.user_id
    return SYSTEM_USER_ID


def rooted(error: FlagcoreError, path: str) -> FlagcoreError:
    """``error`` with its detail paths (``$...``) under ``path``."""
    if type(error) not in (InvalidInput, NotFound):
        return error
    details = [
        attrs.evolve(d, path=path + d.path[1:]) if d.path and d.path.startswith("$") else d
        for d in error.details
    ]
    return type(error)(error.message, details)


def checked_name(value: object, path: str) -> str:
    check_text(value, path, optional=False)
    assert isinstance(value, str)
    if not value.strip():
        raise InvalidInput(f"{path} is empty", [ErrorDetail("must not be empty", path)])
    if len(value) > MAX_NAME_LENGTH:
        raise InvalidInput(
            f"{path} is longer than {MAX_NAME_LENGTH} characters",
            [ErrorDetail(f"at most {MAX_NAME_LENGTH} characters", path)],
        )
    return value


def check_transition(minutes: object, path: str) -> int:
    """Unleash's ``intervalMinutes``: a whole number from 1 (here at most a year)."""
    if type(minutes) is not int or not 1 <= minutes <= MAX_TRANSITION_MINUTES:
        raise InvalidInput(
            f"{path} must be a whole number of minutes from 1 to {MAX_TRANSITION_MINUTES}",
            [ErrorDetail(f"a whole number from 1 to {MAX_TRANSITION_MINUTES}", path)],
        )
    return minutes


AGGREGATION_MODES = ("count", "sum", "avg", "rps", "p50", "p95", "p99")
"""Unleash's ``aggregationMode`` values; each reads a counter or a histogram
(`flagcore.service.impact_metrics`)."""
TIME_RANGES = {"hour": 60, "day": 24 * 60}
"""Unleash's ``timeRange`` values flagcore reads: impact metrics are kept a day, so
``week`` and ``month`` are refused rather than read over less than they say."""
MAX_WINDOW_MINUTES = TIME_RANGES["day"]


def _window_of(time_range: object) -> int:
    if time_range is None:
        raise InvalidInput(
            "say over which window: timeRange (hour or day) or windowMinutes",
            [ErrorDetail("required", "$.impactMetric.timeRange")],
        )
    if time_range not in TIME_RANGES:
        raise InvalidInput(
            "timeRange must be hour or day (impact metrics are kept a day)",
            [ErrorDetail("an unknown time range", "$.impactMetric.timeRange")],
        )
    return TIME_RANGES[str(time_range)]


def checked_safeguard(
    metric_name: object,
    aggregation_mode: object,
    operator: object,
    threshold: object,
    window_minutes: object = None,
    *,
    time_range: object = None,
    label_selectors: object = None,
    action: object = SafeguardAction.PAUSE.value,
    ratio_of: object = None,
) -> Safeguard:
    """A safeguard from what a person typed (Unleash's body, with flagcore's
    ``windowMinutes``, ``ratioOf`` and ``rollbackPlan``), or `InvalidInput` at the body's
    path. The window is ``window_minutes`` or else ``time_range``'s; label selectors must
    be none: a plan's safeguard reads its own flag and environment."""
    checked_name(metric_name, "$.impactMetric.metricName")
    if label_selectors:
        raise InvalidInput(
            "a plan's safeguard reads its own flag and environment: no label selectors",
            [ErrorDetail("must be empty", "$.impactMetric.labelSelectors")],
        )
    if window_minutes is None:
        window_minutes = _window_of(time_range)
    if ratio_of is not None:
        checked_name(ratio_of, "$.impactMetric.ratioOf")
    if aggregation_mode not in AGGREGATION_MODES:
        raise InvalidInput(
            f"aggregationMode must be one of {', '.join(AGGREGATION_MODES)}",
            [ErrorDetail("an unknown aggregation", "$.impactMetric.aggregationMode")],
        )
    operators = {o.value: o for o in SafeguardOperator}
    if operator not in operators:
        raise InvalidInput(
            "operator must be > or <",
            [ErrorDetail("an unknown operator", "$.triggerCondition.operator")],
        )
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, (int, float))
        or not math.isfinite(threshold)
    ):
        raise InvalidInput(
            "threshold must be a finite number",
            [ErrorDetail("a finite number", "$.triggerCondition.threshold")],
        )
    if type(window_minutes) is not int or not 1 <= window_minutes <= MAX_WINDOW_MINUTES:
        raise InvalidInput(
            f"the window must be a whole number of minutes from 1 to {MAX_WINDOW_MINUTES}",
            [ErrorDetail("1 to a day of minutes", "$.impactMetric.windowMinutes")],
        )
    actions = {a.value: a for a in SafeguardAction}
    if action not in actions:
        raise InvalidInput(
            f"action.type must be one of {', '.join(actions)}",
            [ErrorDetail("an unknown action", "$.action.type")],
        )
    assert isinstance(metric_name, str)
    assert isinstance(aggregation_mode, str)
    return Safeguard(
        "",
        metric_name,
        aggregation_mode,
        operators[str(operator)],
        float(threshold),
        window_minutes,
        actions[str(action)],
        ratio_of if isinstance(ratio_of, str) else None,
    )
