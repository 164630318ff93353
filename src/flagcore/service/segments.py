"""Segments: reusable constraint lists, and which strategies use them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import attrs

from flagcore.entities import SegmentDefinition, SegmentDetails, StrategyPlacement
from flagcore.errors import (
    Conflict,
    ErrorDetail,
    InvalidInput,
    NameConflict,
    NotFound,
)
from flagcore.limits import enforce
from flagcore.model import Constraint, Segment
from flagcore.ports import (
    FlagRepository,
    ProjectRepository,
    SegmentRepository,
    SegmentWrite,
    StrategyRepository,
)
from flagcore.service.change_request_gate import (
    refuse_direct_change,
    refuse_segment_change,
)
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.lookups import require_project
from flagcore.validation import check_constraints, check_text
from flagcore.wire.event_data import SegmentData, SegmentLinksData

__all__ = ["Segments", "segments_in_attachment_order"]


class _SegmentUsers(FlagRepository, StrategyRepository, Protocol):
    """The strategies using a segment, with their flags."""


class Segments:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def list_segments(self) -> list[Segment]:
        with self._context.read() as tx:
            return list(tx.list_segments())

    def list_segment_details(self) -> list[SegmentDetails]:
        """Every segment with its creation and how many projects and active flags use it
        (Unleash's ``usedInProjects`` and ``usedInFeatures``), ordered by id."""
        with self._context.read() as tx:
            active = {flag.name: flag for flag in tx.list_flags(archived=False)}
            details = []
            for definition in tx.list_segment_definitions():
                flags = {
                    active[placement.flag]
                    for placement in tx.strategies_using_segment(definition.id)
                    if placement.flag in active
                }
                projects = {flag.project for flag in flags}
                details.append(SegmentDetails(definition, len(projects), len(flags)))
            return details

    def get_segment(self, segment_id: int) -> Segment:
        with self._context.read() as tx:
            return self._segment(tx, segment_id)

    def get_segment_definition(self, segment_id: int) -> SegmentDefinition:
        """The segment with when and by whom it was created."""
        with self._context.read() as tx:
            definition = tx.get_segment_definition(segment_id)
        if definition is None:
            raise NotFound(f"there is no segment with id {segment_id}")
        return definition

    def create_segment(
        self,
        name: str,
        constraints: Sequence[Constraint],
        *,
        description: str | None = None,
        project: str | None = None,
        actor: Actor = SYSTEM,
    ) -> Segment:
        actor = authorize(actor, "create_segment", project=project)
        return self.define_segment(
            name, constraints, description=description, project=project, actor=actor
        ).segment

    def define_segment(
        self,
        name: str,
        constraints: Sequence[Constraint],
        *,
        description: str | None = None,
        project: str | None = None,
        actor: Actor = SYSTEM,
    ) -> SegmentDefinition:
        """Create a segment; the result says when and by whom (``actor``), as Unleash shows."""
        actor = authorize(actor, "define_segment", project=project)
        self._check_segment(name, constraints)
        check_text(description, "$.description")
        created_at = self._context.clock()
        with self._context.unit() as tx:
            existing = tx.list_segments()
            enforce(self._context.limits, "segments", len(existing) + 1, "segments")
            self._check_unique(tx, name, None)
            self._check_project(tx, project)
            segment = tx.create_segment(
                Segment(0, name, tuple(constraints), description, project),
                created_by=actor,
                created_at=created_at,
            )
            self._context.record_event(
                tx, "segment-created", actor, project=project, data=SegmentData.of(segment)
            )
        return SegmentDefinition(segment, created_at, actor)

    def update_segment(
        self,
        segment_id: int,
        name: str,
        constraints: Sequence[Constraint],
        *,
        description: str | None = None,
        project: str | None = None,
        actor: Actor = SYSTEM,
    ) -> Segment:
        """Replace a segment; a segment used outside ``project`` cannot be narrowed to it."""
        who = authorize(actor, "update_segment", project=project)
        with self._context.unit() as tx:
            refuse_segment_change(tx, actor, segment_id)
            return self.update_segment_in(
                tx,
                segment_id,
                name,
                constraints,
                description=description,
                project=project,
                actor=who,
            )

    def update_segment_in(
        self,
        tx: SegmentWrite,
        segment_id: int,
        name: str,
        constraints: Sequence[Constraint],
        *,
        description: str | None = None,
        project: str | None = None,
        actor: str,
    ) -> Segment:
        """`update_segment` inside the caller's unit of work (a change request applied)."""
        self._check_segment(name, constraints)
        check_text(description, "$.description")
        before = self._segment(tx, segment_id)
        self._check_unique(tx, name, segment_id)
        self._check_project(tx, project)
        if project is not None:
            elsewhere = [
                p
                for p in self._active_users(tx, segment_id)
                if (flag := tx.get_flag(p.flag)) is not None and flag.project != project
            ]
            if elsewhere:
                raise Conflict(
                    f'segment {segment_id} is used by flags outside project "{project}"',
                    [ErrorDetail(f"used by {p.flag} in {p.environment}") for p in elsewhere],
                )
        after = Segment(segment_id, name, tuple(constraints), description, project)
        tx.save_segment(after)
        self._context.record_event(
            tx,
            "segment-updated",
            actor,
            project=project,
            data=SegmentData.of(after),
            pre_data=SegmentData.of(before),
        )
        return after

    def delete_segment(self, segment_id: int, *, actor: Actor = SYSTEM) -> None:
        """Refused while a strategy of an active flag uses the segment."""
        who = authorize(actor, "delete_segment")
        with self._context.unit() as tx:
            refuse_segment_change(tx, actor, segment_id)
            self.delete_segment_in(tx, segment_id, actor=who)

    def delete_segment_in(self, tx: SegmentWrite, segment_id: int, *, actor: str) -> None:
        """`delete_segment` inside the caller's unit of work (a change request applied)."""
        segment = self._segment(tx, segment_id)
        users = self._active_users(tx, segment_id)
        if users:
            raise Conflict(
                f'segment "{segment.name}" is used by {len(users)} strategy(ies) '
                "of active flags; remove it from them first",
                [ErrorDetail(f"used by {p.flag} in {p.environment} ({p.id})") for p in users],
            )
        # Archived flags let go of the segment, so nothing points at a missing segment.
        for placement in tx.strategies_using_segment(segment_id):
            strategy = placement.strategy
            kept = tuple(s for s in strategy.segments if s != segment_id)
            tx.save_strategy(
                attrs.evolve(placement, strategy=attrs.evolve(strategy, segments=kept))
            )
        tx.delete_segment(segment_id)
        self._context.record_event(tx, "segment-deleted", actor, pre_data=SegmentData.of(segment))

    def strategies_using_segment(self, segment_id: int) -> list[StrategyPlacement]:
        with self._context.read() as tx:
            self._segment(tx, segment_id)
            return list(tx.strategies_using_segment(segment_id))

    def segment_usage(self, segment_id: int) -> list[tuple[StrategyPlacement, str]]:
        """The strategies using a segment, each with its flag's project."""
        with self._context.read() as tx:
            self._segment(tx, segment_id)
            return [
                (placement, flag.project)
                for placement in tx.strategies_using_segment(segment_id)
                if (flag := tx.get_flag(placement.flag)) is not None
            ]

    def segments_of_strategy(self, strategy_id: str) -> list[SegmentDefinition]:
        with self._context.read() as tx:
            placement = tx.get_strategy(strategy_id)
            if placement is None:
                raise NotFound(f'there is no strategy "{strategy_id}"')
            return [
                definition
                for segment_id in placement.strategy.segments
                if (definition := tx.get_segment_definition(segment_id)) is not None
            ]

    def replace_strategy_segments(
        self,
        strategy_id: str,
        segment_ids: Sequence[int],
        *,
        project: str | None = None,
        environment: str | None = None,
        actor: Actor = SYSTEM,
    ) -> StrategyPlacement:
        """Set a strategy's segments to exactly ``segment_ids``: all or nothing.

        ``project`` and ``environment``, when given (the HTTP API requires both, as
        Unleash's schema does), must be the strategy's own: `NotFound` otherwise."""
        with self._context.unit() as tx:
            if project is not None and tx.get_project(project) is None:
                raise NotFound(
                    f'there is no project "{project}"',
                    [ErrorDetail("unknown project", "$.projectId")],
                )
            placement = tx.get_strategy(strategy_id)
            if placement is None:
                raise NotFound(
                    f'there is no strategy "{strategy_id}"',
                    [ErrorDetail("unknown strategy", "$.strategyId")],
                )
            flag = tx.get_flag(placement.flag)
            if project is not None and (flag is None or flag.project != project):
                raise NotFound(
                    f'there is no strategy "{strategy_id}" in project "{project}"',
                    [ErrorDetail("not the strategy's project", "$.projectId")],
                )
            if environment is not None and placement.environment != environment:
                raise NotFound(
                    f'there is no strategy "{strategy_id}" in environment "{environment}"',
                    [ErrorDetail("not the strategy's environment", "$.environmentId")],
                )
            owner = flag.project if flag is not None else project
            principal = actor
            actor = authorize(
                actor,
                "replace_strategy_segments",
                project=owner,
                environment=placement.environment,
            )
            if owner is not None:
                refuse_direct_change(tx, principal, owner, placement.environment)
            wanted = segments_in_attachment_order(placement.strategy.segments, segment_ids)
            missing = [i for i in wanted if tx.get_segment(i) is None]
            if missing:
                raise NotFound(
                    f"there is no segment with id {missing[0]}",
                    [ErrorDetail(f"unknown segment {i}", "$.segmentIds") for i in missing],
                )
            enforce(
                self._context.limits,
                "segments_per_strategy",
                len(wanted),
                "segments on one strategy",
                "$.segmentIds",
            )
            before = placement.strategy.segments
            updated = attrs.evolve(
                placement, strategy=attrs.evolve(placement.strategy, segments=wanted)
            )
            tx.save_strategy(updated)
            self._context.record_event(
                tx,
                "feature-strategy-segments-updated",
                actor,
                flag=flag,
                environment=placement.environment,
                data=SegmentLinksData(strategy_id, tuple(wanted)),
                pre_data=SegmentLinksData(None, tuple(before)),
            )
        return updated

    # --- shared ---
    def _check_segment(self, name: str, constraints: Sequence[Constraint]) -> None:
        if not isinstance(name, str) or not name.strip():
            raise InvalidInput(
                "a segment needs a name", [ErrorDetail("must not be empty", "$.name")]
            )
        check_constraints(constraints, self._context.limits, "$.constraints")
        values = sum(len(c.values) + (c.value is not None) for c in constraints)
        enforce(
            self._context.limits,
            "segment_values",
            values,
            "values in one segment's constraints",
            "$.constraints",
        )

    @staticmethod
    def _segment(tx: SegmentRepository, segment_id: int) -> Segment:
        segment = tx.get_segment(segment_id)
        if segment is None:
            raise NotFound(f"there is no segment with id {segment_id}")
        return segment

    @staticmethod
    def _check_unique(tx: SegmentRepository, name: str, segment_id: int | None) -> None:
        for other in tx.list_segments():
            if other.name == name and other.id != segment_id:
                raise NameConflict(f'a segment named "{name}" already exists')

    @staticmethod
    def _check_project(tx: ProjectRepository, project: str | None) -> None:
        if project is not None:
            require_project(tx, project)

    @staticmethod
    def _active_users(tx: _SegmentUsers, segment_id: int) -> list[StrategyPlacement]:
        return [
            placement
            for placement in tx.strategies_using_segment(segment_id)
            if (flag := tx.get_flag(placement.flag)) is not None and not flag.archived
        ]


def segments_in_attachment_order(attached: Sequence[int], wanted: Sequence[int]) -> tuple[int, ...]:
    """``wanted`` (each once) in the order Unleash lists a strategy's segments: the order
    they were attached. Unleash keeps the links a change keeps and adds the new ones after
    them, in the order sent (one ``feature_strategy_segment`` row each), and reads them
    back in row order, in the playground too; so ``[1, 2]`` changed to ``[3, 1]`` is
    ``[1, 3]``. Evaluation does not depend on it (every segment must hold)."""
    unique = tuple(dict.fromkeys(wanted))
    kept = tuple(segment_id for segment_id in attached if segment_id in unique)
    return kept + tuple(segment_id for segment_id in unique if segment_id not in kept)
