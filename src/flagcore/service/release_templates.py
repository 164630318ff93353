"""Release templates (issue 32): milestones to apply to flags, each a set of strategies
checked as a flag's would be, in Unleash's (enterprise) shape; root-wide, with Unleash's
``RELEASE_PLAN_TEMPLATE_*`` permissions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import attrs

from flagcore import ports
from flagcore.errors import (
    ErrorDetail,
    FlagcoreError,
    InvalidInput,
    LimitExceeded,
    NameConflict,
    NotFound,
)
from flagcore.model import Strategy
from flagcore.ports import Records, SegmentRepository, StrategyChecks
from flagcore.release_plans import Milestone, ReleasePlanTemplate
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.release_rules import check_transition, checked_name, rooted, user_id_of
from flagcore.service.strategies import new_strategy_id
from flagcore.service.strategy_definitions import StrategyDefinitions
from flagcore.tables import RELEASE_PLAN_TEMPLATES
from flagcore.validation import check_sort_order, check_strategy, check_text
from flagcore.wire.event_data import ReleaseTemplateData

__all__ = [
    "MAX_MILESTONES",
    "MAX_MILESTONE_STRATEGIES",
    "MAX_TEMPLATES",
    "ReleaseTemplates",
    "template_of",
]

MAX_TEMPLATES = 1_000
MAX_MILESTONES = 20
MAX_MILESTONE_STRATEGIES = 30


class _TemplateChecks(Records, StrategyChecks, Protocol):
    """Templates (names unique among those not archived), and what their milestones'
    strategies name."""


class ReleaseTemplates:
    """Templates; a plan copies one (`flagcore.service.release_plans`)."""

    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def _new_id(self) -> str:
        return new_strategy_id(int(self._context.clock().timestamp() * 1000))

    def list_release_plan_templates(self) -> list[ReleasePlanTemplate]:
        """Templates not archived, oldest first (Unleash's list leaves archived ones out)."""
        with self._context.read() as tx:
            found = list(tx.list_records(RELEASE_PLAN_TEMPLATES))
        return sorted(
            (t for t in found if t.archived_at is None), key=lambda t: (t.created_at, t.id)
        )

    def get_release_plan_template(self, template_id: str) -> ReleasePlanTemplate:
        with self._context.read() as tx:
            return template_of(tx, template_id)

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
                user_id_of(actor),
            )
            tx.save_record(RELEASE_PLAN_TEMPLATES, template)
            self._context.record_event(
                tx, "release-plan-template-created", who, data=ReleaseTemplateData.of(template)
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
            before = template_of(tx, template_id)
            checked = self._checked_template(tx, template_id, name, description, milestones)
            after = attrs.evolve(before, name=name, description=description, milestones=checked)
            tx.save_record(RELEASE_PLAN_TEMPLATES, after)
            self._context.record_event(
                tx,
                "release-plan-template-updated",
                who,
                data=ReleaseTemplateData.of(after),
                pre_data=ReleaseTemplateData.of(before),
            )
            return after

    def archive_release_plan_template(self, template_id: str, *, actor: Actor = SYSTEM) -> None:
        """Out of the list and of the choices; plans made from it go on."""
        who = authorize(actor, "archive_release_plan_template")
        with self._context.unit() as tx:
            before = template_of(tx, template_id)
            if before.archived_at is not None:
                return
            after = attrs.evolve(before, archived_at=self._context.clock())
            tx.save_record(RELEASE_PLAN_TEMPLATES, after)
            self._context.record_event(
                tx, "release-plan-template-archived", who, data=ReleaseTemplateData.of(after)
            )

    def delete_release_plan_template(self, template_id: str, *, actor: Actor = SYSTEM) -> None:
        who = authorize(actor, "delete_release_plan_template")
        with self._context.unit() as tx:
            before = template_of(tx, template_id)
            tx.delete_record(RELEASE_PLAN_TEMPLATES, template_id)
            self._context.record_event(
                tx, "release-plan-template-deleted", who, pre_data=ReleaseTemplateData.of(before)
            )

    def _checked_template(
        self,
        tx: _TemplateChecks,
        template_id: str | None,
        name: str,
        description: str | None,
        milestones: Sequence[Milestone],
    ) -> tuple[Milestone, ...]:
        checked_name(name, "$.name")
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
            checked_name(milestone.name, f"{at}.name")
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
    def _strategies_known(tx: ports.StrategyDefinitions) -> dict[str, object]:
        return dict(StrategyDefinitions.known_in(tx))

    def _checked_strategies(
        self,
        tx: SegmentRepository,
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
                raise rooted(error, path) from None
            for k, segment_id in enumerate(strategy.segments):
                if tx.get_segment(segment_id) is None:
                    raise NotFound(
                        f"there is no segment with id {segment_id}",
                        [ErrorDetail("unknown segment", f"{path}.segments[{k}]")],
                    )
            order = strategy.sort_order if strategy.sort_order is not None else j
            checked.append(attrs.evolve(strategy, id=self._new_id(), sort_order=order))
        return tuple(sorted(checked, key=lambda s: s.sort_order or 0))


def template_of(tx: Records, template_id: str) -> ReleasePlanTemplate:
    template: ReleasePlanTemplate | None = tx.get_record(RELEASE_PLAN_TEMPLATES, template_id)
    if template is None:
        raise NotFound(f'there is no release template "{template_id}"')
    return template
