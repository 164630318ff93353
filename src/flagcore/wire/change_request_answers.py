"""Change requests as Unleash's frontend reads them (``changeRequest.types.ts``): the
request with its changes grouped by flag, segment changes, reviews, comments and schedule;
the config rows per environment; the reviewers one may ask."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from flagcore.change_requests import (
    SEGMENT_ACTIONS,
    Change,
    ChangeRequest,
    ChangeRequestCounts,
    ChangeRequestState,
    Comment,
    Review,
)
from flagcore.people import User
from flagcore.wire.answer_table import AnswerField, answer

__all__ = [
    "ActionableChangeRequestsAnswer",
    "AvailableReviewerAnswer",
    "AvailableReviewersAnswer",
    "ChangeAnswer",
    "ChangeRequestAnswer",
    "ChangeRequestCommentAnswer",
    "ChangeRequestConfigAnswer",
    "ChangeRequestFeatureAnswer",
    "ChangeRequestPersonAnswer",
    "ChangeRequestReviewAnswer",
    "ChangeRequestScheduleAnswer",
    "ChangeRequestsCountAnswer",
    "ScheduledChangeRequestAnswer",
    "SegmentChangeAnswer",
]


@answer(("id", "id"), ("username", "username"), ("image_url", "imageUrl"))
@attrs.frozen
class ChangeRequestPersonAnswer:
    """Unleash's ``Pick<IUser, 'id' | 'username' | 'imageUrl'>``; a token has no id."""

    id: int | None
    username: str
    image_url: str | None = None

    @classmethod
    def of(cls, actor: str, user_id: int | None) -> ChangeRequestPersonAnswer:
        # The event log's ``user:<id>:<name>``: the name is what Unleash shows.
        parts = actor.split(":", 2)
        name = parts[2] if len(parts) == 3 and parts[1].isdigit() else actor
        return cls(user_id, name)


@answer(
    ("environment", "environment"),
    ("type", "type"),
    ("change_request_enabled", "changeRequestEnabled"),
    ("required_approvals", "requiredApprovals"),
)
@attrs.frozen
class ChangeRequestConfigAnswer:
    environment: str
    type: str
    change_request_enabled: bool
    required_approvals: int


@answer(
    ("id", "id"),
    ("action", "action"),
    ("payload", "payload"),
    AnswerField("conflict", "conflict", omitted_when_none=True),
    ("created_by", "createdBy"),
    ("created_at", "createdAt"),
)
@attrs.frozen
class ChangeAnswer:
    id: int
    action: str
    payload: Any
    conflict: str | None
    created_by: ChangeRequestPersonAnswer
    created_at: dt.datetime

    @classmethod
    def of(cls, change: Change, conflict: str | None) -> ChangeAnswer:
        person = ChangeRequestPersonAnswer.of(change.created_by, None)
        return cls(
            change.id, change.action.value, change.payload, conflict, person, change.created_at
        )


@answer(
    ("name", "name"),
    AnswerField("conflict", "conflict", omitted_when_none=True),
    ("changes", "changes"),
)
@attrs.frozen
class ChangeRequestFeatureAnswer:
    name: str
    conflict: str | None
    changes: tuple[ChangeAnswer, ...]


@answer(
    ("id", "id"),
    ("action", "action"),
    ("name", "name"),
    ("payload", "payload"),
    AnswerField("conflict", "conflict", omitted_when_none=True),
)
@attrs.frozen
class SegmentChangeAnswer:
    id: int
    action: str
    name: str
    payload: Any
    conflict: str | None


@answer(("created_by", "createdBy"), ("created_at", "createdAt"))
@attrs.frozen
class ChangeRequestReviewAnswer:
    created_by: ChangeRequestPersonAnswer
    created_at: dt.datetime

    @classmethod
    def of(cls, review: Review) -> ChangeRequestReviewAnswer:
        return cls(ChangeRequestPersonAnswer.of(review.actor, review.user_id), review.created_at)


@answer(("id", "id"), ("text", "text"), ("created_by", "createdBy"), ("created_at", "createdAt"))
@attrs.frozen
class ChangeRequestCommentAnswer:
    id: str
    text: str
    created_by: ChangeRequestPersonAnswer
    created_at: dt.datetime

    @classmethod
    def of(cls, comment: Comment) -> ChangeRequestCommentAnswer:
        person = ChangeRequestPersonAnswer.of(comment.actor, comment.user_id)
        return cls(str(comment.id), comment.text, person, comment.created_at)


@answer(
    ("scheduled_at", "scheduledAt"),
    ("status", "status"),
    AnswerField("reason", "reason", omitted_when_none=True),
)
@attrs.frozen
class ChangeRequestScheduleAnswer:
    """``pending``, or ``failed`` with the reason (Unleash's schedule statuses)."""

    scheduled_at: dt.datetime
    status: str
    reason: str | None


@answer(
    ("id", "id"),
    ("title", "title"),
    ("project", "project"),
    ("environment", "environment"),
    ("min_approvals", "minApprovals"),
    ("created_by", "createdBy"),
    ("created_at", "createdAt"),
    ("features", "features"),
    ("segments", "segments"),
    ("approvals", "approvals"),
    ("rejections", "rejections"),
    ("comments", "comments"),
    ("reviewers", "reviewers"),
    ("state", "state"),
    AnswerField("schedule", "schedule", omitted_when_none=True),
)
@attrs.frozen
class ChangeRequestAnswer:
    """A change request as Unleash answers one; a flag's ``conflict`` is set when one of
    its changes conflicts, each change carries its own."""

    id: int
    title: str
    project: str
    environment: str
    min_approvals: int
    created_by: ChangeRequestPersonAnswer
    created_at: dt.datetime
    features: tuple[ChangeRequestFeatureAnswer, ...]
    segments: tuple[SegmentChangeAnswer, ...]
    approvals: tuple[ChangeRequestReviewAnswer, ...]
    rejections: tuple[ChangeRequestReviewAnswer, ...]
    comments: tuple[ChangeRequestCommentAnswer, ...]
    reviewers: tuple[int, ...]
    state: ChangeRequestState
    schedule: ChangeRequestScheduleAnswer | None

    @classmethod
    def of(
        cls, request: ChangeRequest, conflicts: Mapping[int, str] | None = None
    ) -> ChangeRequestAnswer:
        conflicts = conflicts or {}
        by_flag: dict[str, list[ChangeAnswer]] = {}
        segments = []
        for change in request.changes:
            conflict = conflicts.get(change.id)
            if change.action in SEGMENT_ACTIONS:
                name = str((change.payload or {}).get("name", change.segment))
                segments.append(
                    SegmentChangeAnswer(
                        change.id, change.action.value, name, change.payload, conflict
                    )
                )
            else:
                by_flag.setdefault(change.feature or "", []).append(
                    ChangeAnswer.of(change, conflict)
                )
        features = tuple(
            ChangeRequestFeatureAnswer(
                name, next((c.conflict for c in changes if c.conflict), None), tuple(changes)
            )
            for name, changes in by_flag.items()
        )
        schedule = None
        if request.scheduled_at is not None and request.state is ChangeRequestState.SCHEDULED:
            failed = request.schedule_failure is not None
            schedule = ChangeRequestScheduleAnswer(
                request.scheduled_at, "failed" if failed else "pending", request.schedule_failure
            )
        return cls(
            request.id,
            request.title,
            request.project,
            request.environment,
            request.min_approvals,
            ChangeRequestPersonAnswer.of(request.created_by, request.created_by_id),
            request.created_at,
            features,
            tuple(segments),
            tuple(ChangeRequestReviewAnswer.of(r) for r in request.approvals),
            tuple(ChangeRequestReviewAnswer.of(r) for r in request.rejections),
            tuple(ChangeRequestCommentAnswer.of(c) for c in request.comments),
            request.reviewers,
            request.state,
            schedule,
        )


@answer(
    ("id", "id"),
    ("name", "name"),
    ("email", "email"),
    ("username", "username"),
)
@attrs.frozen
class AvailableReviewerAnswer:
    id: int
    name: str | None
    email: str | None
    username: str | None


@answer(("reviewers", "reviewers"))
@attrs.frozen
class AvailableReviewersAnswer:
    reviewers: tuple[AvailableReviewerAnswer, ...]

    @classmethod
    def of(cls, users: Sequence[User]) -> AvailableReviewersAnswer:
        return cls(tuple(AvailableReviewerAnswer(u.id, u.name, u.email, u.username) for u in users))


@answer(
    ("applied", "applied"),
    ("approved", "approved"),
    ("rejected", "rejected"),
    ("review_required", "reviewRequired"),
    ("scheduled", "scheduled"),
    ("total", "total"),
)
@attrs.frozen
class ChangeRequestsCountAnswer:
    """Unleash's ``changeRequestsCountSchema`` (drafts are not counted)."""

    applied: int
    approved: int
    rejected: int
    review_required: int
    scheduled: int
    total: int

    @classmethod
    def of(cls, counts: ChangeRequestCounts) -> ChangeRequestsCountAnswer:
        return cls(
            counts.applied,
            counts.approved,
            counts.rejected,
            counts.in_review,
            counts.scheduled,
            counts.total,
        )


@answer(("total", "total"))
@attrs.frozen
class ActionableChangeRequestsAnswer:
    """Unleash's ``actionableChangeRequestsSchema``: how many wait on the caller."""

    total: int


@answer(("id", "id"), ("environment", "environment"), ("title", "title"))
@attrs.frozen
class ScheduledChangeRequestAnswer:
    """Unleash's ``scheduledChangeRequestViewModelSchema``."""

    id: int
    environment: str
    title: str
