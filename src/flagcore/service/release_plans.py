"""Release plans (issue 32): a template applied to a flag in one environment, with
Unleash's rules where its (enterprise) API shows them.

The plan's milestones are copies of the template's. Starting a milestone adds that
milestone's strategies to the flag there and removes the ones the plan placed before
(added first, so the environment never passes through "no active strategy", which would
switch it off), all in one unit of work with the events of each strategy and the
milestone's own. A milestone's progression starts the next one on its own once it has
been active ``transition_minutes``, unless a safeguard paused the plan: the server's
runner asks `due_release_plans` (a read) and moves each with `advance_release_plan`,
which reads the plan again inside its unit of work, so however many nodes try, one moves
it (docs/release-plans.md).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import attrs

from flagcore.entities import FlagDefinition
from flagcore.errors import Conflict, ErrorDetail, FlagcoreError, InvalidInput, NotFound
from flagcore.ports import (
    FlagRepository,
    FlagWrite,
    KeptRulesWrite,
    KeptWrite,
    ProjectRepository,
    Records,
    StrategyWrite,
)
from flagcore.release_plans import (
    SYSTEM_USER_ID,
    ReleasePlan,
    Safeguard,
    SafeguardAction,
    SafeguardOperator,
)
from flagcore.service.change_request_gate import refuse_direct_change
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.lookups import active_flag, require_environment
from flagcore.service.release_rules import check_transition, user_id_of
from flagcore.service.strategies import Strategies, new_strategy_id
from flagcore.tables import NOT_NULL, RELEASE_PLAN_TEMPLATES, RELEASE_PLANS
from flagcore.wire.event_data import (
    EventData,
    MilestoneStartedData,
    ProgressionData,
    ProgressionsPausedData,
    ProgressionsResumedData,
    ReleasePlanData,
    SafeguardData,
)
from flagcore.wire.release_plan_answers import TransitionConditionAnswer

__all__ = ["ReleasePlans", "SafeguardReading"]

_R = TypeVar("_R")

SafeguardReading = Callable[[Records, ReleasePlan, Safeguard, dt.datetime], float | None]
"""The value a safeguard compares to its threshold (None: no data yet, nothing trips)."""


class _Due(FlagRepository, Records, Protocol):
    """Whether a plan moves: its flag (archived: it waits) and its safeguards' metrics."""


class _Plans(Records, ProjectRepository, Protocol):
    """Release plans, in an environment that must exist."""


class ReleasePlans:
    """The plans applied to flags; `Strategies` places each milestone's strategies as
    `add_strategy` would."""

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

    def _direct(
        self,
        actor: Actor,
        operation: str,
        project: str,
        flag: str,
        environment: str,
        step: Callable[..., _R],
        *arguments: Any,
        **keywords: Any,
    ) -> _R:
        """A person's change made directly: allowed by ``operation``'s permission, refused
        where change requests hold the environment (a change request applies ``step``
        itself), then ``step`` in a unit of work of its own."""
        who = authorize(actor, operation, project=project, environment=environment)
        with self._context.unit() as tx:
            refuse_direct_change(tx, actor, project, environment)
            return step(tx, project, flag, environment, *arguments, actor=who, **keywords)

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
        return self._direct(
            actor,
            "add_release_plan",
            project,
            flag,
            environment,
            self.add_release_plan_in,
            template_id,
            by=user_id_of(actor),
        )

    def add_release_plan_in(
        self,
        tx: KeptRulesWrite,
        project: str,
        flag: str,
        environment: str,
        template_id: str,
        *,
        actor: str,
        by: int = SYSTEM_USER_ID,
    ) -> ReleasePlan:
        """`add_release_plan` inside the caller's unit of work (a change request applied);
        ``by``: the user the plan says created it."""
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
            raise Conflict(f"{flag} already has a release plan in {environment}: remove it first")
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
            by,
        )
        return self._saved(
            tx, plan, "release-plan-added", actor, definition, ReleasePlanData.of(plan)
        )

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
        return self._direct(
            actor,
            "remove_release_plan",
            project,
            flag,
            environment,
            self.remove_release_plan_in,
            plan_id,
        )

    def remove_release_plan_in(
        self,
        tx: KeptRulesWrite,
        project: str,
        flag: str,
        environment: str,
        plan_id: str,
        *,
        actor: str,
    ) -> None:
        """`remove_release_plan` inside the caller's unit of work."""
        definition = active_flag(tx, project, flag)
        plan = _plan(tx, flag, environment, plan_id)
        self._remove_placed(tx, plan, actor)
        tx.delete_record(RELEASE_PLANS, plan.id)
        self._context.record_event(
            tx,
            "release-plan-removed",
            actor,
            flag=definition,
            environment=environment,
            pre_data=ReleasePlanData.of(plan),
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
        return self._direct(
            actor,
            "start_release_plan_milestone",
            project,
            flag,
            environment,
            self.start_release_plan_milestone_in,
            plan_id,
            milestone_id,
        )

    def start_release_plan_milestone_in(
        self,
        tx: KeptRulesWrite,
        project: str,
        flag: str,
        environment: str,
        plan_id: str | None,
        milestone_id: str,
        *,
        actor: str,
    ) -> ReleasePlan:
        """`start_release_plan_milestone` inside the caller's unit of work; without
        ``plan_id``, the plan holding the milestone (Unleash's change names only it)."""
        active_flag(tx, project, flag)
        if plan_id is None:
            plan = _plan_with_milestone(tx, flag, environment, milestone_id)
        else:
            plan = _plan(tx, flag, environment, plan_id)
        if plan.milestone(milestone_id) is None:
            raise NotFound(f'release plan {plan.id} has no milestone "{milestone_id}"')
        if plan.active_milestone_id == milestone_id:
            raise Conflict(f'milestone "{milestone_id}" is already the active one')
        return self._started(tx, plan, milestone_id, actor, automatic=False)

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
        return self._direct(
            actor,
            "change_milestone_progression",
            project,
            flag,
            environment,
            self.change_milestone_progression_in,
            source_milestone_id,
            target_milestone_id,
            interval_minutes,
        )

    def change_milestone_progression_in(
        self,
        tx: KeptRulesWrite,
        project: str,
        flag: str,
        environment: str,
        source_milestone_id: str,
        target_milestone_id: str,
        interval_minutes: int,
        *,
        actor: str,
    ) -> ReleasePlan:
        """`change_milestone_progression` inside the caller's unit of work."""
        minutes = check_transition(interval_minutes, "$.transitionCondition.intervalMinutes")
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
        return self._saved(
            tx,
            after,
            "milestone-progression-changed",
            actor,
            definition,
            ProgressionData(
                plan.id,
                source_milestone_id,
                target_milestone_id,
                TransitionConditionAnswer(minutes),
            ),
        )

    def delete_milestone_progression(
        self,
        project: str,
        flag: str,
        environment: str,
        source_milestone_id: str,
        *,
        actor: Actor = SYSTEM,
    ) -> ReleasePlan:
        return self._direct(
            actor,
            "delete_milestone_progression",
            project,
            flag,
            environment,
            self.delete_milestone_progression_in,
            source_milestone_id,
        )

    def delete_milestone_progression_in(
        self,
        tx: KeptRulesWrite,
        project: str,
        flag: str,
        environment: str,
        source_milestone_id: str,
        *,
        actor: str,
    ) -> ReleasePlan:
        """`delete_milestone_progression` inside the caller's unit of work."""
        definition = active_flag(tx, project, flag)
        plan = _plan_with_milestone(tx, flag, environment, source_milestone_id)
        source = plan.milestone(source_milestone_id)
        assert source is not None
        if source.transition_minutes is None:
            raise NotFound(f'milestone "{source_milestone_id}" has no progression')
        after = self._rescheduled(
            _with_milestone(plan, source_milestone_id, transition_minutes=None)
        )
        return self._saved(
            tx,
            after,
            "milestone-progression-deleted",
            actor,
            definition,
            ProgressionData(plan.id, source_milestone_id),
        )

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
        return self._direct(
            actor,
            "resume_milestone_progressions",
            project,
            flag,
            environment,
            self.resume_milestone_progressions_in,
            plan_id,
        )

    def resume_milestone_progressions_in(
        self,
        tx: KeptRulesWrite,
        project: str,
        flag: str,
        environment: str,
        plan_id: str,
        *,
        actor: str,
    ) -> ReleasePlan:
        """`resume_milestone_progressions` inside the caller's unit of work."""
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
        return self._saved(
            tx,
            after,
            "release-plan-progressions-resumed",
            actor,
            definition,
            ProgressionsResumedData(plan.id, plan.paused_reason),
        )

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
        return self._direct(
            actor,
            "put_release_plan_safeguard",
            project,
            flag,
            environment,
            self.put_release_plan_safeguard_in,
            plan_id,
            safeguard,
        )

    def put_release_plan_safeguard_in(
        self,
        tx: KeptRulesWrite,
        project: str,
        flag: str,
        environment: str,
        plan_id: str,
        safeguard: Safeguard,
        *,
        actor: str,
    ) -> ReleasePlan:
        """`put_release_plan_safeguard` inside the caller's unit of work."""
        definition = active_flag(tx, project, flag)
        plan = _plan(tx, flag, environment, plan_id)
        kept = attrs.evolve(
            safeguard,
            id=plan.safeguards[0].id if plan.safeguards else self._new_id(),
        )
        after = attrs.evolve(plan, safeguards=(kept,))
        return self._saved(
            tx,
            after,
            "release-plan-safeguard-changed",
            actor,
            definition,
            SafeguardData(plan.id, kept.id),
        )

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
        return self._direct(
            actor,
            "delete_release_plan_safeguard",
            project,
            flag,
            environment,
            self.delete_release_plan_safeguard_in,
            plan_id,
            safeguard_id,
        )

    def delete_release_plan_safeguard_in(
        self,
        tx: KeptRulesWrite,
        project: str,
        flag: str,
        environment: str,
        plan_id: str,
        safeguard_id: str,
        *,
        actor: str,
    ) -> ReleasePlan:
        """`delete_release_plan_safeguard` inside the caller's unit of work."""
        definition = active_flag(tx, project, flag)
        plan = _plan(tx, flag, environment, plan_id)
        if all(s.id != safeguard_id for s in plan.safeguards):
            raise NotFound(f'release plan {plan_id} has no safeguard "{safeguard_id}"')
        after = attrs.evolve(
            plan, safeguards=tuple(s for s in plan.safeguards if s.id != safeguard_id)
        )
        return self._saved(
            tx,
            after,
            "release-plan-safeguard-deleted",
            actor,
            definition,
            SafeguardData(plan.id, safeguard_id),
        )

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
        self, tx: KeptRulesWrite, plan: ReleasePlan, who: str, now: dt.datetime
    ) -> ReleasePlan:
        assert plan.active_milestone_id is not None
        assert plan.next_move_at is not None
        following = plan.after(plan.active_milestone_id)
        assert following is not None
        late = round((now - plan.next_move_at).total_seconds(), 3)
        executed = _with_milestone(plan, plan.active_milestone_id, progression_executed_at=now)
        return self._started(tx, executed, following.id, who, automatic=True, delay_seconds=late)

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

    def _move_of(self, tx: _Due, plan: ReleasePlan, now: dt.datetime) -> tuple[str, str] | None:
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
        self, tx: Records, plan: ReleasePlan, safeguard: Safeguard, now: dt.datetime
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
        self, tx: KeptRulesWrite, plan: ReleasePlan, reason: str, who: str, now: dt.datetime
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
        rolled = self._started(tx, paused, previous.id, who, automatic=True, rollback=True)
        # A rollback leaves the plan paused where it went back to.
        held = attrs.evolve(
            _with_milestone(rolled, previous.id, paused_at=now),
            paused_reason=reason,
            next_move_at=None,
        )
        tx.save_record(RELEASE_PLANS, held)
        return held

    def _pause_event(
        self, tx: FlagWrite, plan: ReleasePlan, reason: str, action: str, who: str
    ) -> None:
        """Unleash's ``release-plan-progressions-paused``, which integrations can send."""
        self._context.record_event(
            tx,
            "release-plan-progressions-paused",
            who,
            flag=active_flag(tx, plan.project, plan.flag),
            environment=plan.environment,
            data=ProgressionsPausedData(plan.id, plan.active_milestone_id, reason, action),
        )

    # --- inner steps ---
    def _started(
        self,
        tx: KeptRulesWrite,
        plan: ReleasePlan,
        milestone_id: str,
        who: str,
        *,
        automatic: bool,
        delay_seconds: float | None = None,
        rollback: bool | None = None,
    ) -> ReleasePlan:
        """Start ``milestone_id``: by a person (not ``automatic``), or on its own (how
        late), or going back (``rollback``), as its event says."""
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
            data=MilestoneStartedData(
                plan.id,
                milestone_id,
                milestone.name,
                previous,
                automatic,
                delay_seconds,
                rollback,
            ),
        )
        return after

    def _saved(
        self,
        tx: KeptWrite,
        plan: ReleasePlan,
        kind: str,
        who: str,
        definition: FlagDefinition,
        data: EventData,
    ) -> ReleasePlan:
        """``plan`` stored, with the event a person's change of it is."""
        tx.save_record(RELEASE_PLANS, plan)
        self._context.record_event(
            tx, kind, who, flag=definition, environment=plan.environment, data=data
        )
        return plan

    def _remove_placed(self, tx: StrategyWrite, plan: ReleasePlan, who: str) -> None:
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


def _plans_at(tx: Records, flag: str, environment: str) -> list[ReleasePlan]:
    return list(tx.list_records(RELEASE_PLANS, where={"flag": flag, "environment": environment}))


def _plan(tx: _Plans, flag: str, environment: str, plan_id: str) -> ReleasePlan:
    require_environment(tx, environment)
    plan: ReleasePlan | None = tx.get_record(RELEASE_PLANS, plan_id)
    if plan is None or (plan.flag, plan.environment) != (flag, environment):
        raise NotFound(f'there is no release plan "{plan_id}" on {flag} in {environment}')
    return plan


def _plan_with_milestone(tx: _Plans, flag: str, environment: str, milestone_id: str) -> ReleasePlan:
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
