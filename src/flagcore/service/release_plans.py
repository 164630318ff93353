"""Release templates and plans (issue 32), with Unleash's rules where its (enterprise)
API shows them.

A plan is a template applied to a flag in one environment: its milestones are copies.
Starting a milestone adds that milestone's strategies to the flag there and removes the
ones the plan placed before (added first, so the environment never passes through "no
active strategy", which would switch it off), all in one unit of work with the events of
each strategy and the milestone's own. A milestone's progression starts the next one on
its own once it has been active ``transition_minutes``: the server's worker asks
`due_release_plans` (a read) and applies each with `advance_release_plan`, which reads the
plan again inside its unit of work, so however many nodes try, one moves it
(docs/release-plans.md).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from flagcore.errors import (
    Conflict,
    ErrorDetail,
    FlagcoreError,
    InvalidInput,
    LimitExceeded,
    NameConflict,
    NotFound,
)
from flagcore.model import Strategy
from flagcore.ports import Transaction
from flagcore.principals import Principal
from flagcore.release_plans import (
    SYSTEM_USER_ID,
    Milestone,
    ReleasePlan,
    ReleasePlanTemplate,
    Safeguard,
    SafeguardAction,
    SafeguardOperator,
)
from flagcore.service.change_request_gate import refuse_direct_change
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.lookups import active_flag, require_environment
from flagcore.service.strategies import Strategies, new_strategy_id
from flagcore.service.strategy_definitions import StrategyDefinitions
from flagcore.tables import NOT_NULL, RELEASE_PLAN_TEMPLATES, RELEASE_PLANS
from flagcore.validation import MAX_NAME_LENGTH, check_sort_order, check_strategy, check_text

__all__ = [
    "AGGREGATION_MODES",
    "MAX_MILESTONES",
    "MAX_MILESTONE_STRATEGIES",
    "MAX_TEMPLATES",
    "MAX_TRANSITION_MINUTES",
    "TIME_RANGES",
    "ReleasePlans",
    "SafeguardReading",
    "check_transition",
    "checked_safeguard",
]

MAX_TEMPLATES = 1_000
MAX_MILESTONES = 20
MAX_MILESTONE_STRATEGIES = 30
MAX_TRANSITION_MINUTES = 366 * 24 * 60  # a year: longer is a plan nobody is watching

SafeguardReading = Callable[[Transaction, ReleasePlan, Safeguard, dt.datetime], float | None]
"""The value a safeguard compares to its threshold (None: no data yet, nothing trips)."""


def _user_id(actor: Actor) -> int:
    if isinstance(actor, Principal) and actor.user_id is not None:
        return actor.user_id
    return SYSTEM_USER_ID


def _rooted(error: FlagcoreError, path: str) -> FlagcoreError:
    """``error`` with its detail paths (``$...``) under ``path``."""
    if type(error) not in (InvalidInput, NotFound):
        return error
    details = [
        attrs.evolve(d, path=path + d.path[1:]) if d.path and d.path.startswith("$") else d
        for d in error.details
    ]
    return type(error)(error.message, details)


def _checked_name(value: object, path: str) -> str:
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


def checked_safeguard(
    metric_name: object,
    aggregation_mode: object,
    operator: object,
    threshold: object,
    window_minutes: object,
    *,
    action: object = SafeguardAction.PAUSE.value,
    ratio_of: object = None,
) -> Safeguard:
    """A safeguard from what a person typed, or `InvalidInput` at the body's path."""
    _checked_name(metric_name, "$.impactMetric.metricName")
    if ratio_of is not None:
        _checked_name(ratio_of, "$.impactMetric.ratioOf")
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


class ReleasePlans:
    """Templates (root-wide) and the plans applied to flags; `Strategies` places each
    milestone's strategies as `add_strategy` would."""

    def __init__(
        self,
        context: ServiceContext,
        *,
        strategies: Strategies,
        safeguard_reading: SafeguardReading | None = None,
    ) -> None:
        self._context = context
        self._strategies = strategies
        self._reading = safeguard_reading

    def _new_id(self) -> str:
        return new_strategy_id(int(self._context.clock().timestamp() * 1000))

    # --- templates ---
    def list_release_plan_templates(self) -> list[ReleasePlanTemplate]:
        """Templates not archived, oldest first (Unleash's list leaves archived ones out)."""
        with self._context.read() as tx:
            found = list(tx.list_records(RELEASE_PLAN_TEMPLATES))
        return sorted(
            (t for t in found if t.archived_at is None), key=lambda t: (t.created_at, t.id)
        )

    def get_release_plan_template(self, template_id: str) -> ReleasePlanTemplate:
        with self._context.read() as tx:
            return _template(tx, template_id)

    def create_release_plan_template(
        self,
        name: str,
        description: str | None,
        milestones: Sequence[Milestone],
        *,
        actor: Actor = SYSTEM,
    ) -> ReleasePlanTemplate:
        """A template; each milestone and each of its strategies gets a new id."""
        who = authorize(actor, "create_release_plan_template")
        with self._context.unit() as tx:
            checked = self._checked_template(tx, None, name, description, milestones)
            if len(tx.list_records(RELEASE_PLAN_TEMPLATES)) >= MAX_TEMPLATES:
                raise LimitExceeded(
                    f"at most {MAX_TEMPLATES} release templates",
                    "release templates",
                    MAX_TEMPLATES,
                )
            template = ReleasePlanTemplate(
                self._new_id(),
                name,
                description,
                checked,
                self._context.clock(),
                _user_id(actor),
            )
            tx.save_record(RELEASE_PLAN_TEMPLATES, template)
            self._context.record_event(
                tx, "release-plan-template-created", who, data=_template_data(template)
            )
            return template

    def update_release_plan_template(
        self,
        template_id: str,
        name: str,
        description: str | None,
        milestones: Sequence[Milestone],
        *,
        actor: Actor = SYSTEM,
    ) -> ReleasePlanTemplate:
        """Replace the template's name, description and milestones; plans made from it
        keep their copies."""
        who = authorize(actor, "update_release_plan_template")
        with self._context.unit() as tx:
            before = _template(tx, template_id)
            checked = self._checked_template(tx, template_id, name, description, milestones)
            after = attrs.evolve(before, name=name, description=description, milestones=checked)
            tx.save_record(RELEASE_PLAN_TEMPLATES, after)
            self._context.record_event(
                tx,
                "release-plan-template-updated",
                who,
                data=_template_data(after),
                pre_data=_template_data(before),
            )
            return after

    def archive_release_plan_template(self, template_id: str, *, actor: Actor = SYSTEM) -> None:
        """Out of the list and of the choices; plans made from it go on."""
        who = authorize(actor, "archive_release_plan_template")
        with self._context.unit() as tx:
            before = _template(tx, template_id)
            if before.archived_at is not None:
                return
            after = attrs.evolve(before, archived_at=self._context.clock())
            tx.save_record(RELEASE_PLAN_TEMPLATES, after)
            self._context.record_event(
                tx, "release-plan-template-archived", who, data=_template_data(after)
            )

    def delete_release_plan_template(self, template_id: str, *, actor: Actor = SYSTEM) -> None:
        who = authorize(actor, "delete_release_plan_template")
        with self._context.unit() as tx:
            before = _template(tx, template_id)
            tx.delete_record(RELEASE_PLAN_TEMPLATES, template_id)
            self._context.record_event(
                tx, "release-plan-template-deleted", who, pre_data=_template_data(before)
            )

    def _checked_template(
        self,
        tx: Transaction,
        template_id: str | None,
        name: str,
        description: str | None,
        milestones: Sequence[Milestone],
    ) -> tuple[Milestone, ...]:
        _checked_name(name, "$.name")
        check_text(description, "$.description")
        for other in tx.list_records(RELEASE_PLAN_TEMPLATES):
            if other.name == name and other.id != template_id and other.archived_at is None:
                raise NameConflict(
                    f'a release template named "{name}" already exists',
                    [ErrorDetail("name taken", "$.name")],
                )
        if not milestones:
            raise InvalidInput(
                "a release template needs at least one milestone",
                [ErrorDetail("at least one milestone", "$.milestones")],
            )
        if len(milestones) > MAX_MILESTONES:
            raise LimitExceeded(
                f"a release template holds at most {MAX_MILESTONES} milestones",
                "milestones per template",
                MAX_MILESTONES,
                "$.milestones",
            )
        known = self._strategies_known(tx)
        checked = []
        names: set[str] = set()
        for i, milestone in enumerate(milestones):
            at = f"$.milestones[{i}]"
            _checked_name(milestone.name, f"{at}.name")
            if milestone.name in names:
                raise InvalidInput(
                    f'two milestones are named "{milestone.name}"',
                    [ErrorDetail("a name another milestone has", f"{at}.name")],
                )
            names.add(milestone.name)
            check_sort_order(milestone.sort_order, f"{at}.sortOrder")
            if milestone.transition_minutes is not None:
                check_transition(
                    milestone.transition_minutes, f"{at}.transitionCondition.intervalMinutes"
                )
            strategies = self._checked_strategies(tx, known, milestone.strategies, at)
            checked.append(
                Milestone(
                    self._new_id(),
                    milestone.name,
                    milestone.sort_order,
                    strategies,
                    milestone.transition_minutes,
                )
            )
        checked.sort(key=lambda m: m.sort_order)
        return tuple(checked)

    @staticmethod
    def _strategies_known(tx: Transaction) -> dict[str, object]:
        return dict(StrategyDefinitions.known_in(tx))

    def _checked_strategies(
        self,
        tx: Transaction,
        known: dict[str, object],
        strategies: Sequence[Strategy],
        at: str,
    ) -> tuple[Strategy, ...]:
        if len(strategies) > MAX_MILESTONE_STRATEGIES:
            raise LimitExceeded(
                f"a milestone holds at most {MAX_MILESTONE_STRATEGIES} strategies",
                "strategies per milestone",
                MAX_MILESTONE_STRATEGIES,
                f"{at}.strategies",
            )
        checked = []
        for j, strategy in enumerate(strategies):
            path = f"{at}.strategies[{j}]"
            try:
                check_strategy(strategy, known, self._context.limits)
            except FlagcoreError as error:
                raise _rooted(error, path) from None
            for k, segment_id in enumerate(strategy.segments):
                if tx.get_segment(segment_id) is None:
                    raise NotFound(
                        f"there is no segment with id {segment_id}",
                        [ErrorDetail("unknown segment", f"{path}.segments[{k}]")],
                    )
            order = strategy.sort_order if strategy.sort_order is not None else j
            checked.append(attrs.evolve(strategy, id=self._new_id(), sort_order=order))
        return tuple(sorted(checked, key=lambda s: s.sort_order or 0))

    # --- plans ---
    def release_plans_of(self, project: str, flag: str, environment: str) -> list[ReleasePlan]:
        with self._context.read() as tx:
            active_flag(tx, project, flag)
            require_environment(tx, environment)
            return _plans_at(tx, flag, environment)

    def release_plans_of_flag(self, project: str, flag: str) -> list[ReleasePlan]:
        """Every plan on the flag, in every environment (the flag's page)."""
        with self._context.read() as tx:
            active_flag(tx, project, flag)
            return list(tx.list_records(RELEASE_PLANS, where={"flag": flag}))

    def add_release_plan(
        self,
        project: str,
        flag: str,
        environment: str,
        template_id: str,
        *,
        actor: Actor = SYSTEM,
    ) -> ReleasePlan:
        """The template's milestones copied onto the flag there; none is started (as in
        Unleash, a person starts the first). One plan per flag and environment."""
        who = authorize(actor, "add_release_plan", project=project, environment=environment)
        with self._context.unit() as tx:
            refuse_direct_change(tx, actor, project, environment)
            definition = active_flag(tx, project, flag)
            require_environment(tx, environment)
            if type(template_id) is not str:
                raise InvalidInput(
                    "templateId must be a string", [ErrorDetail("a string", "$.templateId")]
                )
            template = tx.get_record(RELEASE_PLAN_TEMPLATES, template_id)
            if template is None or template.archived_at is not None:
                raise NotFound(
                    f'there is no release template "{template_id}"',
                    [ErrorDetail("unknown template", "$.templateId")],
                )
            if _plans_at(tx, flag, environment):
                raise Conflict(
                    f"{flag} already has a release plan in {environment}: remove it first"
                )
            plan = ReleasePlan(
                self._new_id(),
                template.id,
                template.name,
                template.description,
                project,
                flag,
                environment,
                tuple(
                    attrs.evolve(
                        m,
                        id=self._new_id(),
                        strategies=tuple(attrs.evolve(s, id=self._new_id()) for s in m.strategies),
                    )
                    for m in template.milestones
                ),
                self._context.clock(),
                _user_id(actor),
            )
            tx.save_record(RELEASE_PLANS, plan)
            self._context.record_event(
                tx,
                "release-plan-added",
                who,
                flag=definition,
                environment=environment,
                data=_plan_data(plan),
            )
            return plan

    def remove_release_plan(
        self,
        project: str,
        flag: str,
        environment: str,
        plan_id: str,
        *,
        actor: Actor = SYSTEM,
    ) -> None:
        """The plan and the strategies it placed (if the last active strategy goes, the
        environment is switched off, as deleting it by hand would)."""
        who = authorize(actor, "remove_release_plan", project=project, environment=environment)
        with self._context.unit() as tx:
            refuse_direct_change(tx, actor, project, environment)
            definition = active_flag(tx, project, flag)
            plan = _plan(tx, flag, environment, plan_id)
            self._remove_placed(tx, plan, who)
            tx.delete_record(RELEASE_PLANS, plan.id)
            self._context.record_event(
                tx,
                "release-plan-removed",
                who,
                flag=definition,
                environment=environment,
                pre_data=_plan_data(plan),
            )

    def start_release_plan_milestone(
        self,
        project: str,
        flag: str,
        environment: str,
        plan_id: str,
        milestone_id: str,
        *,
        actor: Actor = SYSTEM,
    ) -> ReleasePlan:
        """Make ``milestone_id`` the active milestone: its strategies replace the ones
        the plan placed. Started by a person, a paused plan goes on again."""
        who = authorize(
            actor, "start_release_plan_milestone", project=project, environment=environment
        )
        with self._context.unit() as tx:
            refuse_direct_change(tx, actor, project, environment)
            active_flag(tx, project, flag)
            plan = _plan(tx, flag, environment, plan_id)
            if plan.milestone(milestone_id) is None:
                raise NotFound(f'release plan {plan_id} has no milestone "{milestone_id}"')
            if plan.active_milestone_id == milestone_id:
                raise Conflict(f'milestone "{milestone_id}" is already the active one')
            return self._started(tx, plan, milestone_id, who, {"automatic": False})

    def change_milestone_progression(
        self,
        project: str,
        flag: str,
        environment: str,
        source_milestone_id: str,
        target_milestone_id: str,
        interval_minutes: int,
        *,
        actor: Actor = SYSTEM,
    ) -> ReleasePlan:
        """After ``interval_minutes`` active, the source milestone is followed by the
        target on its own. The target is the next milestone (Unleash's UI offers no
        other)."""
        who = authorize(
            actor, "change_milestone_progression", project=project, environment=environment
        )
        minutes = check_transition(interval_minutes, "$.transitionCondition.intervalMinutes")
        with self._context.unit() as tx:
            refuse_direct_change(tx, actor, project, environment)
            definition = active_flag(tx, project, flag)
            plan = _plan_with_milestone(tx, flag, environment, source_milestone_id)
            following = plan.after(source_milestone_id)
            if following is None or following.id != target_milestone_id:
                raise InvalidInput(
                    "a milestone progresses to the milestone after it",
                    [ErrorDetail("not the next milestone", "$.targetMilestone")],
                )
            after = self._rescheduled(
                _with_milestone(plan, source_milestone_id, transition_minutes=minutes)
            )
            tx.save_record(RELEASE_PLANS, after)
            self._context.record_event(
                tx,
                "milestone-progression-changed",
                who,
                flag=definition,
                environment=environment,
                data={
                    "releasePlanId": plan.id,
                    "sourceMilestone": source_milestone_id,
                    "targetMilestone": target_milestone_id,
                    "transitionCondition": {"intervalMinutes": minutes},
                },
            )
            return after

    def delete_milestone_progression(
        self,
        project: str,
        flag: str,
        environment: str,
        source_milestone_id: str,
        *,
        actor: Actor = SYSTEM,
    ) -> ReleasePlan:
        who = authorize(
            actor, "delete_milestone_progression", project=project, environment=environment
        )
        with self._context.unit() as tx:
            refuse_direct_change(tx, actor, project, environment)
            definition = active_flag(tx, project, flag)
            plan = _plan_with_milestone(tx, flag, environment, source_milestone_id)
            source = plan.milestone(source_milestone_id)
            assert source is not None
            if source.transition_minutes is None:
                raise NotFound(f'milestone "{source_milestone_id}" has no progression')
            after = self._rescheduled(
                _with_milestone(plan, source_milestone_id, transition_minutes=None)
            )
            tx.save_record(RELEASE_PLANS, after)
            self._context.record_event(
                tx,
                "milestone-progression-deleted",
                who,
                flag=definition,
                environment=environment,
                data={"releasePlanId": plan.id, "sourceMilestone": source_milestone_id},
            )
            return after

    def resume_milestone_progressions(
        self,
        project: str,
        flag: str,
        environment: str,
        plan_id: str,
        *,
        actor: Actor = SYSTEM,
    ) -> ReleasePlan:
        """Lift a safeguard's pause: the active milestone's progression counts again
        from its start (one already overdue moves at the worker's next look)."""
        who = authorize(
            actor, "resume_milestone_progressions", project=project, environment=environment
        )
        with self._context.unit() as tx:
            refuse_direct_change(tx, actor, project, environment)
            definition = active_flag(tx, project, flag)
            plan = _plan(tx, flag, environment, plan_id)
            if plan.paused_reason is None:
                raise Conflict(f"release plan {plan_id} is not paused")
            resumed = attrs.evolve(
                plan,
                paused_reason=None,
                milestones=tuple(attrs.evolve(m, paused_at=None) for m in plan.milestones),
            )
            after = self._rescheduled(resumed)
            tx.save_record(RELEASE_PLANS, after)
            self._context.record_event(
                tx,
                "release-plan-progressions-resumed",
                who,
                flag=definition,
                environment=environment,
                data={"releasePlanId": plan.id, "pausedReason": plan.paused_reason},
            )
            return after

    # --- safeguards ---
    def put_release_plan_safeguard(
        self,
        project: str,
        flag: str,
        environment: str,
        plan_id: str,
        safeguard: Safeguard,
        *,
        actor: Actor = SYSTEM,
    ) -> ReleasePlan:
        """The plan's safeguard, made or replaced (one per plan, as Unleash's UI)."""
        who = authorize(
            actor, "put_release_plan_safeguard", project=project, environment=environment
        )
        with self._context.unit() as tx:
            refuse_direct_change(tx, actor, project, environment)
            definition = active_flag(tx, project, flag)
            plan = _plan(tx, flag, environment, plan_id)
            kept = attrs.evolve(
                safeguard,
                id=plan.safeguards[0].id if plan.safeguards else self._new_id(),
            )
            after = attrs.evolve(plan, safeguards=(kept,))
            tx.save_record(RELEASE_PLANS, after)
            self._context.record_event(
                tx,
                "release-plan-safeguard-changed",
                who,
                flag=definition,
                environment=environment,
                data={"releasePlanId": plan.id, "safeguardId": kept.id},
            )
            return after

    def delete_release_plan_safeguard(
        self,
        project: str,
        flag: str,
        environment: str,
        plan_id: str,
        safeguard_id: str,
        *,
        actor: Actor = SYSTEM,
    ) -> ReleasePlan:
        who = authorize(
            actor, "delete_release_plan_safeguard", project=project, environment=environment
        )
        with self._context.unit() as tx:
            refuse_direct_change(tx, actor, project, environment)
            definition = active_flag(tx, project, flag)
            plan = _plan(tx, flag, environment, plan_id)
            if all(s.id != safeguard_id for s in plan.safeguards):
                raise NotFound(f'release plan {plan_id} has no safeguard "{safeguard_id}"')
            after = attrs.evolve(
                plan, safeguards=tuple(s for s in plan.safeguards if s.id != safeguard_id)
            )
            tx.save_record(RELEASE_PLANS, after)
            self._context.record_event(
                tx,
                "release-plan-safeguard-deleted",
                who,
                flag=definition,
                environment=environment,
                data={"releasePlanId": plan.id, "safeguardId": safeguard_id},
            )
            return after

    # --- the worker ---
    def due_release_plans(self) -> list[str]:
        """Ids of the plans the worker should move now: a progression whose time came,
        or a safeguard that trips (a read; `advance_release_plan` checks again)."""
        now = self._context.clock()
        with self._context.read() as tx:
            waiting = list(tx.list_records(RELEASE_PLANS, where={"next_move_at": NOT_NULL}))
            return [p.id for p in waiting if self._move_of(tx, p, now) is not None]

    def advance_release_plan(self, plan_id: str, *, actor: Actor = SYSTEM) -> ReleasePlan | None:
        """Move one plan if it is still due: a tripped safeguard pauses it (and rolls it
        back when it says so), else a due progression starts the next milestone. Read
        again inside the unit of work, and every store runs write units one at a time
        across nodes, so only the first node to try moves it. None when nothing moved."""
        who = authorize(actor, "advance_release_plan")
        now = self._context.clock()
        try:
            with self._context.unit() as tx:
                plan: ReleasePlan | None = tx.get_record(RELEASE_PLANS, plan_id)
                if plan is None:
                    return None
                move = self._move_of(tx, plan, now)
                if move is None:
                    return None
                kind, reason = move
                if kind == "pause":
                    return self._paused(tx, plan, reason, who, now)
                return self._progressed(tx, plan, who, now)
        except FlagcoreError as error:
            return self._stuck(plan_id, who, now, error)

    def _progressed(
        self, tx: Transaction, plan: ReleasePlan, who: str, now: dt.datetime
    ) -> ReleasePlan:
        assert plan.active_milestone_id is not None
        assert plan.next_move_at is not None
        following = plan.after(plan.active_milestone_id)
        assert following is not None
        late = round((now - plan.next_move_at).total_seconds(), 3)
        executed = _with_milestone(plan, plan.active_milestone_id, progression_executed_at=now)
        return self._started(
            tx, executed, following.id, who, {"automatic": True, "delaySeconds": late}
        )

    def _stuck(
        self, plan_id: str, who: str, now: dt.datetime, error: FlagcoreError
    ) -> ReleasePlan | None:
        """A move that cannot be made (the next milestone's strategies refused: a segment
        deleted since the template was made) writes nothing of it; the plan is paused with
        the reason, so the runner does not try again every tick and a person decides."""
        with self._context.unit() as tx:
            plan: ReleasePlan | None = tx.get_record(RELEASE_PLANS, plan_id)
            if plan is None or plan.active_milestone_id is None:
                return None
            if self._move_of(tx, plan, now) is None:
                return None
            reason = f"the plan could not move on: {error.message}"
            paused = attrs.evolve(
                _with_milestone(plan, plan.active_milestone_id, paused_at=now),
                paused_reason=reason,
                next_move_at=None,
            )
            tx.save_record(RELEASE_PLANS, paused)
            self._pause_event(tx, plan, reason, "pause", who)
            return paused

    def _move_of(
        self, tx: Transaction, plan: ReleasePlan, now: dt.datetime
    ) -> tuple[str, str] | None:
        if plan.next_move_at is None or plan.paused_reason is not None:
            return None
        flag = tx.get_flag(plan.flag)
        if flag is None or flag.archived:  # an archived flag's plan waits for its revival
            return None
        for safeguard in plan.safeguards:
            reason = self._tripped(tx, plan, safeguard, now)
            if reason is not None:
                return "pause", reason
        if plan.next_move_at <= now:
            return "progress", ""
        return None

    def _tripped(
        self, tx: Transaction, plan: ReleasePlan, safeguard: Safeguard, now: dt.datetime
    ) -> str | None:
        if self._reading is None:
            return None
        value = self._reading(tx, plan, safeguard, now)
        if value is None:
            return None
        above = safeguard.operator is SafeguardOperator.ABOVE
        if not (value > safeguard.threshold if above else value < safeguard.threshold):
            return None
        what = safeguard.metric_name
        if safeguard.ratio_of is not None:
            what = f"{safeguard.metric_name} / {safeguard.ratio_of}"
        return (
            f"{what} ({safeguard.aggregation_mode}) over the last "
            f"{safeguard.window_minutes} minutes was {value:g}, "
            f"{'above' if above else 'below'} "
            f"{safeguard.threshold:g}"
        )

    def _paused(
        self, tx: Transaction, plan: ReleasePlan, reason: str, who: str, now: dt.datetime
    ) -> ReleasePlan:
        assert plan.active_milestone_id is not None
        rollback = any(s.action is SafeguardAction.ROLLBACK for s in plan.safeguards)
        previous = plan.before(plan.active_milestone_id) if rollback else None
        self._pause_event(tx, plan, reason, "pause" if previous is None else "rollback", who)
        paused = attrs.evolve(
            _with_milestone(plan, plan.active_milestone_id, paused_at=now),
            paused_reason=reason,
            next_move_at=None,
        )
        if previous is None:
            tx.save_record(RELEASE_PLANS, paused)
            return paused
        rolled = self._started(tx, paused, previous.id, who, {"automatic": True, "rollback": True})
        # A rollback leaves the plan paused where it went back to.
        held = attrs.evolve(
            _with_milestone(rolled, previous.id, paused_at=now),
            paused_reason=reason,
            next_move_at=None,
        )
        tx.save_record(RELEASE_PLANS, held)
        return held

    def _pause_event(
        self, tx: Transaction, plan: ReleasePlan, reason: str, action: str, who: str
    ) -> None:
        """Unleash's ``release-plan-progressions-paused``, which integrations can send."""
        self._context.record_event(
            tx,
            "release-plan-progressions-paused",
            who,
            flag=active_flag(tx, plan.project, plan.flag),
            environment=plan.environment,
            data={
                "releasePlanId": plan.id,
                "milestoneId": plan.active_milestone_id,
                "reason": reason,
                "action": action,
            },
        )

    # --- inner steps ---
    def _started(
        self,
        tx: Transaction,
        plan: ReleasePlan,
        milestone_id: str,
        who: str,
        how: dict[str, object],
    ) -> ReleasePlan:
        milestone = plan.milestone(milestone_id)
        assert milestone is not None
        definition = active_flag(tx, plan.project, plan.flag)
        placed = []
        for strategy in milestone.strategies:
            stored = self._strategies.add_strategy_in(
                tx,
                plan.project,
                plan.flag,
                plan.environment,
                attrs.evolve(strategy, id=None, sort_order=None),
                actor=who,
            )
            assert stored.id is not None
            placed.append(stored.id)
        self._remove_placed(tx, plan, who)
        now = self._context.clock()
        previous = plan.active_milestone_id
        started = attrs.evolve(
            plan,
            active_milestone_id=milestone_id,
            placed_strategy_ids=tuple(placed),
            paused_reason=None,
            milestones=tuple(
                attrs.evolve(m, started_at=now, paused_at=None) if m.id == milestone_id else m
                for m in plan.milestones
            ),
        )
        after = self._rescheduled(started)
        tx.save_record(RELEASE_PLANS, after)
        self._context.record_event(
            tx,
            "release-plan-milestone-started",
            who,
            flag=definition,
            environment=plan.environment,
            data={
                "releasePlanId": plan.id,
                "milestoneId": milestone_id,
                "milestoneName": milestone.name,
                "previousMilestoneId": previous,
                **how,
            },
        )
        return after

    def _remove_placed(self, tx: Transaction, plan: ReleasePlan, who: str) -> None:
        """The strategies the plan placed that are still there (a person may have deleted
        one by hand)."""
        for strategy_id in plan.placed_strategy_ids:
            placement = tx.get_strategy(strategy_id)
            if placement is None or (placement.flag, placement.environment) != (
                plan.flag,
                plan.environment,
            ):
                continue
            self._strategies.delete_strategy_in(
                tx, plan.project, plan.flag, plan.environment, strategy_id, actor=who
            )

    @staticmethod
    def _rescheduled(plan: ReleasePlan) -> ReleasePlan:
        """``next_move_at``: the active milestone's start plus its progression, when a
        milestone follows it and the plan is not paused."""
        active = plan.milestone(plan.active_milestone_id) if plan.active_milestone_id else None
        if (
            active is None
            or active.transition_minutes is None
            or active.started_at is None
            or plan.paused_reason is not None
            or plan.after(active.id) is None
        ):
            return attrs.evolve(plan, next_move_at=None)
        due = active.started_at + dt.timedelta(minutes=active.transition_minutes)
        return attrs.evolve(plan, next_move_at=due)


def _template(tx: Transaction, template_id: str) -> ReleasePlanTemplate:
    template: ReleasePlanTemplate | None = tx.get_record(RELEASE_PLAN_TEMPLATES, template_id)
    if template is None:
        raise NotFound(f'there is no release template "{template_id}"')
    return template


def _plans_at(tx: Transaction, flag: str, environment: str) -> list[ReleasePlan]:
    return list(tx.list_records(RELEASE_PLANS, where={"flag": flag, "environment": environment}))


def _plan(tx: Transaction, flag: str, environment: str, plan_id: str) -> ReleasePlan:
    require_environment(tx, environment)
    plan: ReleasePlan | None = tx.get_record(RELEASE_PLANS, plan_id)
    if plan is None or (plan.flag, plan.environment) != (flag, environment):
        raise NotFound(f'there is no release plan "{plan_id}" on {flag} in {environment}')
    return plan


def _plan_with_milestone(
    tx: Transaction, flag: str, environment: str, milestone_id: str
) -> ReleasePlan:
    require_environment(tx, environment)
    for plan in _plans_at(tx, flag, environment):
        if plan.milestone(milestone_id) is not None:
            return plan
    raise NotFound(f'there is no milestone "{milestone_id}" on {flag} in {environment}')


def _with_milestone(plan: ReleasePlan, milestone_id: str, **changes: Any) -> ReleasePlan:
    return attrs.evolve(
        plan,
        milestones=tuple(
            attrs.evolve(m, **changes) if m.id == milestone_id else m for m in plan.milestones
        ),
    )


def _template_data(template: ReleasePlanTemplate) -> dict[str, object]:
    return {
        "id": template.id,
        "name": template.name,
        "milestones": [m.name for m in template.milestones],
    }


def _plan_data(plan: ReleasePlan) -> dict[str, object]:
    return {
        "id": plan.id,
        "templateId": plan.template_id,
        "name": plan.name,
        "milestones": [m.name for m in plan.milestones],
    }
