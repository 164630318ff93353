"""Release plans (issue 32): a rollout in steps, in the shape of Unleash's (enterprise)
release templates and plans.

A `ReleasePlanTemplate` holds ordered `Milestone`s, each a set of strategies (10% → 50%
→ 100% of users by userId). Applied to a flag in an environment it becomes a
`ReleasePlan` whose milestones are copies: editing the template later changes no plan.
Starting a milestone replaces the strategies the plan placed on the flag with that
milestone's. A milestone may carry a progression (``transition_minutes``): once it has
been active that long, the next one starts on its own, unless a `Safeguard` has paused
the plan.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping

import attrs

from flagcore.model import Strategy

__all__ = [
    "SYSTEM_USER_ID",
    "ImpactPoint",
    "ImpactSeries",
    "Milestone",
    "ReleasePlan",
    "ReleasePlanTemplate",
    "Safeguard",
    "SafeguardAction",
    "SafeguardOperator",
]

SYSTEM_USER_ID = -1337
"""Unleash's id for what no person did (an admin token, the server's own moves)."""


class SafeguardOperator(enum.StrEnum):
    """Unleash's ``safeguardTriggerConditionSchema.operator``."""

    ABOVE = ">"
    BELOW = "<"


class SafeguardAction(enum.StrEnum):
    """What a triggered safeguard does: Unleash pauses the plan's progression; flagcore
    may also roll back to the milestone before the active one."""

    PAUSE = "pausePlan"
    ROLLBACK = "rollbackPlan"


@attrs.frozen
class Milestone:
    """One step of a plan or template. In a plan, ``started_at`` is when it last became
    active, ``paused_at`` when a safeguard stopped its progression."""

    id: str
    name: str
    sort_order: int
    strategies: tuple[Strategy, ...] = ()
    transition_minutes: int | None = None
    started_at: dt.datetime | None = None
    paused_at: dt.datetime | None = None
    progression_executed_at: dt.datetime | None = None


@attrs.frozen
class ReleasePlanTemplate:
    """Milestones to apply to flags; archived ones are kept for the plans made from them
    to name, and offered no more."""

    id: str
    name: str
    description: str | None
    milestones: tuple[Milestone, ...]
    created_at: dt.datetime
    created_by_user_id: int
    archived_at: dt.datetime | None = None


@attrs.frozen
class Safeguard:
    """Pause a plan's automatic progression when ``metric_name`` (an impact metric of the
    flag's environment), aggregated over the last ``window_minutes``, crosses
    ``threshold``. With ``ratio_of``, the value is ``metric_name`` divided by that
    metric (an error rate: errors over requests)."""

    id: str
    metric_name: str
    aggregation_mode: str
    # Converters: a stored safeguard read back as JSON text gives the plain strings.
    operator: SafeguardOperator = attrs.field(converter=SafeguardOperator)
    threshold: float = attrs.field()
    window_minutes: int = attrs.field()
    action: SafeguardAction = attrs.field(default=SafeguardAction.PAUSE, converter=SafeguardAction)
    ratio_of: str | None = None


@attrs.frozen
class ReleasePlan:
    """A template applied to ``flag`` in ``environment``. ``placed_strategy_ids``: the
    flag's strategies the active milestone put there (what the next start replaces).
    ``next_move_at``: when the worker looks at it next (the active milestone's
    progression is due); None when nothing moves on its own."""

    id: str
    template_id: str
    name: str
    description: str | None
    project: str
    flag: str
    environment: str
    milestones: tuple[Milestone, ...]
    created_at: dt.datetime
    created_by_user_id: int
    active_milestone_id: str | None = None
    placed_strategy_ids: tuple[str, ...] = ()
    safeguards: tuple[Safeguard, ...] = ()
    paused_reason: str | None = None
    next_move_at: dt.datetime | None = None

    def milestone(self, milestone_id: str) -> Milestone | None:
        """The plan's milestone of that id, if it has one."""
        return next((m for m in self.milestones if m.id == milestone_id), None)

    def after(self, milestone_id: str) -> Milestone | None:
        """The milestone following ``milestone_id`` in sort order, if any."""
        ids = [m.id for m in self.milestones]
        index = ids.index(milestone_id) + 1
        return self.milestones[index] if index < len(ids) else None

    def before(self, milestone_id: str) -> Milestone | None:
        """The milestone preceding ``milestone_id`` (where a rollback goes), if any."""
        ids = [m.id for m in self.milestones]
        index = ids.index(milestone_id) - 1
        return self.milestones[index] if index >= 0 else None


@attrs.frozen
class ImpactSeries:
    """An impact metric of a flag in an environment, as first reported: what bounds how
    many series (and so rows a minute) an environment keeps."""

    environment: str
    flag: str
    name: str
    kind: str
    first_seen: dt.datetime


@attrs.frozen
class ImpactPoint:
    """One minute of one series. Counter: ``value`` sums the increments reported; gauge:
    the last value; histogram: ``value`` sums the observations' sum, ``count`` their
    number, ``buckets`` the cumulative counts per upper bound (``+Inf`` included)."""

    environment: str
    flag: str
    name: str
    minute: dt.datetime
    value: float = 0.0
    count: int = 0
    buckets: Mapping[str, int] = attrs.field(factory=dict)
