"""A flag's lifecycle as Unleash 7's ``GET …/features/<f>/lifecycle`` answers it
(``featureLifecycleSchema``: a bare array of stages, oldest first), and the flag types
with their expected lifetimes (``featureTypesSchema``)."""

from __future__ import annotations

import datetime as dt

import attrs

from flagcore.entities import FlagStage
from flagcore.wire.answer_table import AnswerField, answer

__all__ = [
    "ArchiveSuggestionAnswer",
    "ArchiveSuggestionsAnswer",
    "FeatureTypeAnswer",
    "FeatureTypesAnswer",
    "FlagStageAnswer",
]


@answer(
    AnswerField("stage", "stage"),
    AnswerField("status", "status", omitted_when_none=True),
    AnswerField("status_value", "statusValue", omitted_when_none=True),
    AnswerField("entered_stage_at", "enteredStageAt"),
    AnswerField("seconds_in_stage", "secondsInStage"),
)
@attrs.frozen
class FlagStageAnswer:
    """Unleash's stage (``stage``, ``enteredStageAt``, a completed stage's ``status`` and
    ``statusValue``) and flagcore's ``secondsInStage``: whole seconds from its entry to the
    next stage's, or to now for the stage the flag is in."""

    stage: str
    status: str | None
    status_value: str | None
    entered_stage_at: dt.datetime
    seconds_in_stage: int

    @classmethod
    def of(cls, stage: FlagStage, spent: dt.timedelta) -> FlagStageAnswer:
        seconds = int(spent.total_seconds())
        return cls(stage.stage, stage.status, stage.status_value, stage.entered_at, seconds)


@answer(
    AnswerField("id", "id"),
    AnswerField("name", "name"),
    AnswerField("description", "description"),
    AnswerField("lifetime_days", "lifetimeDays"),
)
@attrs.frozen
class FeatureTypeAnswer:
    """Unleash's ``featureTypeSchema``: a flag type and its expected lifetime in days
    (null: never potentially stale)."""

    id: str
    name: str
    description: str
    lifetime_days: int | None


@answer(AnswerField("version", "version"), AnswerField("types", "types"))
@attrs.frozen
class FeatureTypesAnswer:
    """Unleash's ``featureTypesSchema``."""

    version: int
    types: tuple[FeatureTypeAnswer, ...]


@answer(
    AnswerField("flag", "feature"),
    AnswerField("project", "project"),
    AnswerField("reasons", "reasons"),
)
@attrs.frozen
class ArchiveSuggestionAnswer:
    """A flag that looks safe to archive, and why (flagcore's own shape, issue 32)."""

    flag: str
    project: str
    reasons: tuple[str, ...]


@answer(AnswerField("suggestions", "suggestions"))
@attrs.frozen
class ArchiveSuggestionsAnswer:
    suggestions: tuple[ArchiveSuggestionAnswer, ...]
