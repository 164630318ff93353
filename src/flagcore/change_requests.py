"""Change requests (issue 30): a second person approves a change to an environment before
it takes effect, in Unleash's (enterprise) shape.

Per project and environment `ChangeRequestSettings` say whether changes there go through
a request and how many approvals one needs. A `ChangeRequest` gathers `Change` values
(Unleash's ``{feature, action, payload}``) drafted by one person; it moves through
Unleash's states (`ChangeRequestState`) and, once applied, its changes are written in one
unit of work. Each change remembers a digest of what it is about (the flag in the
environment, or the segment) as it was drafted, so a later edit by someone else shows as
a conflict instead of being overwritten.
"""

from __future__ import annotations

import datetime as dt
import enum
from typing import Any

import attrs

__all__ = [
    "CLOSED_STATES",
    "SEGMENT_ACTIONS",
    "Change",
    "ChangeAction",
    "ChangeRequest",
    "ChangeRequestSettings",
    "ChangeRequestState",
    "Comment",
    "Review",
]


class ChangeRequestState(enum.StrEnum):
    """Unleash's states, spelled as its API spells them."""

    DRAFT = "Draft"
    IN_REVIEW = "In review"
    APPROVED = "Approved"
    APPLIED = "Applied"
    SCHEDULED = "Scheduled"
    CANCELLED = "Cancelled"
    REJECTED = "Rejected"


CLOSED_STATES = frozenset(
    {ChangeRequestState.APPLIED, ChangeRequestState.CANCELLED, ChangeRequestState.REJECTED}
)
"""States nothing leaves (Unleash's ``isClosed``)."""


class ChangeAction(enum.StrEnum):
    """The actions flagcore applies (Unleash's names), release plans' among them."""

    UPDATE_ENABLED = "updateEnabled"
    ADD_STRATEGY = "addStrategy"
    UPDATE_STRATEGY = "updateStrategy"
    DELETE_STRATEGY = "deleteStrategy"
    REORDER_STRATEGY = "reorderStrategy"
    PATCH_VARIANT = "patchVariant"
    ARCHIVE_FEATURE = "archiveFeature"
    ADD_DEPENDENCY = "addDependency"
    DELETE_DEPENDENCY = "deleteDependency"
    UPDATE_SEGMENT = "updateSegment"
    DELETE_SEGMENT = "deleteSegment"
    ADD_RELEASE_PLAN = "addReleasePlan"
    DELETE_RELEASE_PLAN = "deleteReleasePlan"
    START_MILESTONE = "startMilestone"
    CHANGE_MILESTONE_PROGRESSION = "changeMilestoneProgression"
    DELETE_MILESTONE_PROGRESSION = "deleteMilestoneProgression"
    RESUME_MILESTONE_PROGRESSION = "resumeMilestoneProgression"
    CHANGE_SAFEGUARD = "changeReleasePlanSafeguard"
    DELETE_SAFEGUARD = "deleteReleasePlanSafeguard"


SEGMENT_ACTIONS = frozenset({ChangeAction.UPDATE_SEGMENT, ChangeAction.DELETE_SEGMENT})
"""Actions about a segment (their ``feature`` is null); the others are about a flag."""


@attrs.frozen
class ChangeRequestSettings:
    """Whether changes to ``environment`` of ``project`` go through change requests."""

    project: str
    environment: str
    enabled: bool
    required_approvals: int


@attrs.frozen
class Change:
    """One drafted change. ``payload`` is the canonical JSON of the action's typed
    payload (`flagcore.wire.change_payloads`); ``baseline`` the digest of what it is about
    when it was drafted, ``baseline_event`` the newest event id then (events after it on
    the same flag or segment say who changed it since)."""

    id: int
    feature: str | None
    segment: int | None
    # Read back from a store as its name: made a `ChangeAction` again, so ``is`` holds.
    action: ChangeAction = attrs.field(converter=ChangeAction)
    payload: Any
    created_by: str
    created_at: dt.datetime
    baseline: str
    baseline_event: int


@attrs.frozen
class Review:
    """An approval or a rejection: by whom, when."""

    actor: str
    user_id: int | None
    created_at: dt.datetime


@attrs.frozen
class Comment:
    id: int
    text: str
    actor: str
    user_id: int | None
    created_at: dt.datetime


@attrs.frozen
class ChangeRequest:
    """A request for one environment of one project; a ``Draft`` is its author's own
    (one per author per project and environment)."""

    id: int
    project: str
    environment: str
    title: str
    state: ChangeRequestState
    created_by: str
    created_by_id: int | None
    created_at: dt.datetime
    min_approvals: int
    changes: tuple[Change, ...] = ()
    approvals: tuple[Review, ...] = ()
    rejections: tuple[Review, ...] = ()
    comments: tuple[Comment, ...] = ()
    reviewers: tuple[int, ...] = ()
    scheduled_at: dt.datetime | None = None
    schedule_failure: str | None = None
    updated_at: dt.datetime | None = None
    scheduled_by: str | None = None


@attrs.frozen
class ChangeRequestCounts:
    """A project's change requests (not drafts) by state, and how many in all."""

    applied: int
    approved: int
    rejected: int
    in_review: int
    scheduled: int
    total: int
