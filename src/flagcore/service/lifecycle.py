"""A flag's lifecycle in Unleash 7's stages: initial → pre-live → live → completed →
archived, with the time each was entered.

As Unleash derives them: ``initial`` when the flag was made, ``pre-live`` when SDK metrics
first counted it in an environment whose type is not ``production``, ``live`` when they
first counted it in a ``production`` environment, ``completed`` when someone marked it so
(``kept`` or ``discarded``, with the variant or state kept), ``archived`` when it was
archived. ``initial`` and ``archived`` are the flag's own times; the stages metrics reveal
are written in the metrics' own transaction (`note_seen`), once, so retention deleting old
buckets loses nothing. The time spent in each stage runs from its entry to the next
stage's entry (for the stage the flag is in, to now), as Unleash's own UI computes it from
consecutive ``enteredStageAt`` (`StageTime`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import Protocol

import attrs

from flagcore.entities import FlagDefinition, FlagMetrics, FlagStage
from flagcore.errors import ErrorDetail, InvalidInput, NotFound
from flagcore.ports import FlagLookups, ProjectRepository, Records
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.lookups import active_flag
from flagcore.tables import FLAG_STAGES
from flagcore.validation import check_text
from flagcore.wire.event_data import FlagCompletedData

__all__ = ["COMPLETED_STATUSES", "STAGES", "Lifecycle", "StageTime", "note_seen", "stage_times"]

STAGES = ("initial", "pre-live", "live", "completed", "archived")
COMPLETED_STATUSES = ("kept", "discarded")
MAX_STATUS_VALUE_LENGTH = 255  # a variant's or a state's name


class _StageNotes(Records, ProjectRepository, Protocol):
    """Flags' stages, and the environments' types (production or not)."""


def note_seen(tx: _StageNotes, rows: Iterable[FlagMetrics], now: dt.datetime) -> None:
    """Record ``pre-live``/``live`` for each flag these metrics are the first of in a
    non-production/production environment (inside the metrics' transaction)."""
    seen = {(row.flag, row.environment) for row in rows if row.yes or row.no}
    if not seen:
        return
    types = {environment.name: environment.type for environment in tx.list_environments()}
    for flag, environment in sorted(seen):
        stage = "live" if types.get(environment) == "production" else "pre-live"
        if tx.get_record(FLAG_STAGES, (flag, stage)) is None:
            tx.save_record(FLAG_STAGES, FlagStage(flag, stage, now))


@attrs.frozen
class StageTime:
    """A stage the flag entered and how long it spent there: until the next stage was
    entered (``left_at``), or, for the stage it is in (``left_at`` None), until now."""

    stage: FlagStage
    left_at: dt.datetime | None
    spent: dt.timedelta


def stage_times(stages: Sequence[FlagStage], now: dt.datetime) -> list[StageTime]:
    """Each stage (oldest first, as `stages_of` gives them) with the time spent in it;
    never negative (a clock that stepped back between two stages counts 0)."""
    timed = []
    for index, stage in enumerate(stages):
        left_at = stages[index + 1].entered_at if index + 1 < len(stages) else None
        spent = (left_at or now) - stage.entered_at
        timed.append(StageTime(stage, left_at, max(spent, dt.timedelta(0))))
    return timed


def _flag_in(tx: FlagLookups, project: str, name: str) -> FlagDefinition:
    """The flag, active or archived (an archived flag has a lifecycle too)."""
    flag = tx.get_flag(name)
    if flag is None or flag.project != project:
        if tx.get_project(project) is None:
            raise NotFound(f'there is no project "{project}"')
        raise NotFound(f'there is no flag named "{name}" in project "{project}"')
    return flag


def stages_of(tx: Records, flag: FlagDefinition) -> list[FlagStage]:
    """Every stage the flag entered, oldest first."""
    stages = [FlagStage(flag.name, "initial", flag.created_at)]
    stages += sorted(
        (s for s in tx.list_records(FLAG_STAGES, {"flag": flag.name}) if s.stage in STAGES),
        key=lambda s: (s.entered_at, STAGES.index(s.stage)),
    )
    if flag.archived_at is not None:
        stages.append(FlagStage(flag.name, "archived", flag.archived_at))
    return stages


class Lifecycle:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def lifecycle_of(self, project: str, name: str) -> list[FlagStage]:
        with self._context.read() as tx:
            return stages_of(tx, _flag_in(tx, project, name))

    def lifecycle_timeline(self, project: str, name: str) -> list[StageTime]:
        """Every stage the flag entered, oldest first, with the time it spent in each
        (the current one up to the service's clock now)."""
        return stage_times(self.lifecycle_of(project, name), self._context.clock())

    def complete_flag(
        self,
        project: str,
        name: str,
        status: str,
        status_value: str | None = None,
        *,
        actor: Actor = SYSTEM,
    ) -> FlagStage:
        """Mark the flag completed (Unleash's "mark completed"): ``kept`` or
        ``discarded``, and what was kept. Marking it again changes the status and keeps
        the time it was first completed."""
        actor = authorize(actor, "complete_flag", project=project)
        if status not in COMPLETED_STATUSES:
            raise InvalidInput(
                f"status must be kept or discarded; got {str(status)[:40]!r}",
                [ErrorDetail("must be kept or discarded", "$.status")],
            )
        check_text(status_value, "$.statusValue")
        if status_value is not None and len(status_value) > MAX_STATUS_VALUE_LENGTH:
            raise InvalidInput(
                f"statusValue is longer than {MAX_STATUS_VALUE_LENGTH} characters",
                [ErrorDetail(f"at most {MAX_STATUS_VALUE_LENGTH} characters", "$.statusValue")],
            )
        with self._context.unit() as tx:
            flag = active_flag(tx, project, name)
            before = tx.get_record(FLAG_STAGES, (name, "completed"))
            entered = before.entered_at if before is not None else self._context.clock()
            stage = FlagStage(name, "completed", entered, status, status_value)
            tx.save_record(FLAG_STAGES, stage)
            self._context.record_event(
                tx,
                "feature-completed",
                actor,
                flag=flag,
                data=FlagCompletedData(status, status_value),
            )
        return stage

    def uncomplete_flag(self, project: str, name: str, *, actor: Actor = SYSTEM) -> None:
        """Take the completed mark away (a no-op on a flag not completed)."""
        actor = authorize(actor, "uncomplete_flag", project=project)
        with self._context.unit() as tx:
            flag = active_flag(tx, project, name)
            if tx.get_record(FLAG_STAGES, (name, "completed")) is None:
                return
            tx.delete_record(FLAG_STAGES, (name, "completed"))
            self._context.record_event(tx, "feature-uncompleted", actor, flag=flag)
