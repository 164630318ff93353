"""Change requests (issue 30): the settings per project and environment, drafts, the
review, and applying every change of a request in one unit of work.

A change is checked when it is drafted by applying it, with the other new changes, through
the very write methods a direct change goes through (``*_in``, inside a unit of work that
is then rolled back): a change the direct route would refuse is refused here, with the
same message and its JSON path under the change. Applying runs the same methods for real,
in one unit of work: all the changes or none.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import attrs

from flagcore.change_requests import (
    CLOSED_STATES,
    SEGMENT_ACTIONS,
    Change,
    ChangeAction,
    ChangeRequest,
    ChangeRequestCounts,
    ChangeRequestSettings,
    ChangeRequestState,
    Comment,
    Review,
)
from flagcore.errors import (
    Conflict,
    ErrorDetail,
    FlagcoreError,
    Forbidden,
    InvalidInput,
    LimitExceeded,
    NameConflict,
    NotFound,
)
from flagcore.model import Dependency, Strategy
from flagcore.permissions import Permission
from flagcore.ports import (
    EventLog,
    FlagLookups,
    KeptRulesWrite,
    ProjectRepository,
    Records,
    RulesWrite,
    SegmentRepository,
    StrategyRepository,
)
from flagcore.preview import ProposedChange
from flagcore.principals import Principal
from flagcore.service.archive import Archive
from flagcore.service.change_request_gate import change_requests_on
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.dependencies import Dependencies
from flagcore.service.environments import Environments
from flagcore.service.lookups import require_environment, require_project
from flagcore.service.release_plans import ReleasePlans
from flagcore.service.release_rules import checked_safeguard, rooted
from flagcore.service.roles import principal_in
from flagcore.service.segments import Segments
from flagcore.service.strategies import Strategies
from flagcore.service.variants import FlagVariants
from flagcore.tables import CHANGE_REQUEST_SETTINGS, CHANGE_REQUESTS, RELEASE_PLANS, USERS
from flagcore.validation import check_text
from flagcore.wire.change_payloads import (
    EnabledPayload,
    MilestoneIdPayload,
    PlanIdPayload,
    ProgressionPayload,
    SafeguardChangePayload,
    SafeguardIdPayload,
    SegmentIdPayload,
    SegmentPayload,
    SourceMilestonePayload,
    StrategyIdPayload,
    StrategyOrderPayload,
    TemplateIdPayload,
    VariantsPayload,
    read_payload,
    write_payload,
)
from flagcore.wire.event_data import (
    ChangeAddedData,
    ChangeIdNote,
    ChangeRequestData,
    ChangeRequestNote,
    ChangeRequestReviewersData,
    ChangeRequestSettingsData,
    CommentNote,
    IdData,
    ScheduleNote,
    TextNote,
    TitleNote,
)

__all__ = [
    "MAX_CHANGES",
    "MAX_COMMENTS",
    "MAX_REQUIRED_APPROVALS",
    "ChangeRequestConfig",
    "ChangeRequestView",
    "ChangeRequests",
    "DraftChange",
    "FlagEndState",
]

MAX_REQUIRED_APPROVALS = 10
"""Unleash's UI offers 1 to 10 approvals."""

MAX_CHANGES = 100
"""Changes one request holds (a request is kept and read whole)."""

MAX_COMMENTS = 500
"""Comments one request holds."""

DIRECT_OPERATIONS: Mapping[ChangeAction, str] = {
    ChangeAction.UPDATE_ENABLED: "set_environment_enabled",
    ChangeAction.ADD_STRATEGY: "add_strategy",
    ChangeAction.UPDATE_STRATEGY: "update_strategy",
    ChangeAction.DELETE_STRATEGY: "delete_strategy",
    ChangeAction.REORDER_STRATEGY: "reorder_strategies",
    ChangeAction.PATCH_VARIANT: "set_flag_variants",
    ChangeAction.ARCHIVE_FEATURE: "archive_flag",
    ChangeAction.ADD_DEPENDENCY: "set_dependencies",
    ChangeAction.DELETE_DEPENDENCY: "set_dependencies",
    ChangeAction.UPDATE_SEGMENT: "update_segment",
    ChangeAction.DELETE_SEGMENT: "delete_segment",
    ChangeAction.ADD_RELEASE_PLAN: "add_release_plan",
    ChangeAction.DELETE_RELEASE_PLAN: "remove_release_plan",
    ChangeAction.START_MILESTONE: "start_release_plan_milestone",
    ChangeAction.CHANGE_MILESTONE_PROGRESSION: "change_milestone_progression",
    ChangeAction.DELETE_MILESTONE_PROGRESSION: "delete_milestone_progression",
    ChangeAction.RESUME_MILESTONE_PROGRESSION: "resume_milestone_progressions",
    ChangeAction.CHANGE_SAFEGUARD: "put_release_plan_safeguard",
    ChangeAction.DELETE_SAFEGUARD: "delete_release_plan_safeguard",
}
"""The direct operation each action stands for: drafting it needs that operation's
permission too (a person drafts only what they could propose to do)."""

_D = ChangeRequestState


@attrs.frozen
class DraftChange:
    """A change as asked for: Unleash's ``{feature, action, payload}``; ``path`` is where
    it sits in the body (``$`` or ``$[1]``), for the paths of its errors."""

    feature: str | None
    action: str
    payload: Any = None
    path: str = "$"


class _ProjectRecords(Records, ProjectRepository, Protocol):
    """Change requests and their settings, in a project that must exist."""


class _Subjects(FlagLookups, StrategyRepository, SegmentRepository, EventLog, Records, Protocol):
    """What a change is about as it is now (a flag's rules and release plans, a segment),
    and the events since it was drafted."""


class _Review(_Subjects, Records, Protocol):
    """A request as it stands: its approvals counted (who may still approve) and its
    conflicts."""


class _Applying(RulesWrite, Records, Protocol):
    """Every change of a request applied, checked for conflicts and approvals first: the
    request, its flags' rules, segments, and the events (7 of the port's 13 parts)."""


@attrs.frozen
class ChangeRequestConfig:
    """One environment's row of a project's change-request config."""

    environment: str
    type: str
    enabled: bool
    required_approvals: int


@attrs.frozen
class ChangeRequestView:
    """A request with what is true now: the conflict of each change whose flag or segment
    changed since it was drafted (change id → what changed, by whom)."""

    request: ChangeRequest
    conflicts: Mapping[int, str]
    counted_approvals: int = 0
    """The approvals that count now (of people who still may approve there)."""


@attrs.frozen
class FlagEndState:
    """One flag of a request in the request's environment as all the request's changes
    for it would leave it (tried, then rolled back): ``change`` holds its enabled state,
    strategies and variants then; None when no change of it is about them, when it is
    archived, or when the changes cannot be applied as they stand (``failure`` says why)."""

    flag: str
    actions: tuple[ChangeAction, ...]
    change: ProposedChange | None
    failure: str | None = None


CONFIG_ACTIONS = frozenset(
    {
        ChangeAction.UPDATE_ENABLED,
        ChangeAction.ADD_STRATEGY,
        ChangeAction.UPDATE_STRATEGY,
        ChangeAction.DELETE_STRATEGY,
        ChangeAction.REORDER_STRATEGY,
        ChangeAction.PATCH_VARIANT,
        # A release plan's milestone started or the plan removed places or removes its
        # strategies; its other changes (progressions, safeguards) move no rule now.
        ChangeAction.START_MILESTONE,
        ChangeAction.DELETE_RELEASE_PLAN,
    }
)
"""Actions that change a flag's environment config (enabled, strategies, variants): what
a preview counts."""


class _TrialDone(Exception):
    """Rolls a trial application back once every change went through."""


class _EarlierFailed(Exception):
    """A request's earlier change no longer applies as it stands (its conflict says why):
    the new changes are then tried on their own."""


class ChangeRequests:
    """Change requests over the write parts they apply changes through."""

    def __init__(
        self,
        context: ServiceContext,
        *,
        strategies: Strategies,
        environments: Environments,
        variants: FlagVariants,
        dependencies: Dependencies,
        archive: Archive,
        segments: Segments,
        release_plans: ReleasePlans,
    ) -> None:
        self._context = context
        self._strategies = strategies
        self._environments = environments
        self._variants = variants
        self._dependencies = dependencies
        self._archive = archive
        self._segments = segments
        self._release_plans = release_plans

    # --- config ---
    def change_request_config(self, project: str) -> list[ChangeRequestConfig]:
        with self._context.read() as tx:
            require_project(tx, project)
            rows = []
            for environment in tx.list_environments():
                settings = tx.get_record(CHANGE_REQUEST_SETTINGS, (project, environment.name))
                rows.append(
                    ChangeRequestConfig(
                        environment.name,
                        environment.type,
                        settings is not None and settings.enabled,
                        settings.required_approvals if settings is not None else 1,
                    )
                )
            return rows

    def set_change_request_config(
        self,
        project: str,
        environment: str,
        *,
        enabled: bool,
        required_approvals: int,
        actor: Actor = SYSTEM,
    ) -> ChangeRequestSettings:
        name = authorize(actor, "set_change_request_config", project=project)
        if not 1 <= required_approvals <= MAX_REQUIRED_APPROVALS:
            raise InvalidInput(
                f"requiredApprovals must be between 1 and {MAX_REQUIRED_APPROVALS}",
                [ErrorDetail(f"must be 1 to {MAX_REQUIRED_APPROVALS}", "$.requiredApprovals")],
            )
        with self._context.unit() as tx:
            require_project(tx, project)
            require_environment(tx, environment)
            before = tx.get_record(CHANGE_REQUEST_SETTINGS, (project, environment))
            after = ChangeRequestSettings(project, environment, enabled, required_approvals)
            tx.save_record(CHANGE_REQUEST_SETTINGS, after)
            self._context.record_event(
                tx,
                "change-request-configuration-updated",
                name,
                project=project,
                environment=environment,
                data=ChangeRequestSettingsData.of(after),
                pre_data=None if before is None else ChangeRequestSettingsData.of(before),
            )
        return after

    # --- reading ---
    def get_change_request(self, project: str, request_id: int) -> ChangeRequestView:
        with self._context.read() as tx:
            return self._view(tx, _request(tx, project, request_id))

    def list_change_requests(self, project: str) -> list[ChangeRequestView]:
        """Every request of the project but drafts (a draft is its author's own)."""
        with self._context.read() as tx:
            require_project(tx, project)
            found = tx.list_records(CHANGE_REQUESTS, where={"project": project})
            return [self._view(tx, r) for r in found if r.state is not _D.DRAFT]

    def open_change_requests(
        self, project: str, viewer: Actor, *, feature: str | None = None
    ) -> list[ChangeRequestView]:
        """Requests not closed yet, the viewer's own drafts among them (Unleash's
        ``pending``), optionally only those changing ``feature``."""
        who = _identity(viewer)
        with self._context.read() as tx:
            require_project(tx, project)
            found = []
            for request in tx.list_records(CHANGE_REQUESTS, where={"project": project}):
                if request.state in CLOSED_STATES:
                    continue
                if request.state is _D.DRAFT and not _is_author(request, who):
                    continue
                if feature is not None and all(c.feature != feature for c in request.changes):
                    continue
                found.append(self._view(tx, request))
            return found

    def change_request_counts(self, project: str) -> ChangeRequestCounts:
        """Unleash's ``changeRequestsCountSchema``: requests (not drafts) by state."""
        with self._context.read() as tx:
            require_project(tx, project)
            found = [
                self._shown(tx, r)
                for r in tx.list_records(CHANGE_REQUESTS, where={"project": project})
                if r.state is not _D.DRAFT
            ]
            by_state = {state: sum(r.state is state for r in found) for state in _D}
            return ChangeRequestCounts(
                applied=by_state[_D.APPLIED],
                approved=by_state[_D.APPROVED],
                rejected=by_state[_D.REJECTED],
                in_review=by_state[_D.IN_REVIEW],
                scheduled=by_state[_D.SCHEDULED],
                total=len(found),
            )

    def actionable_change_requests(self, project: str, viewer: Actor) -> int:
        """How many requests wait on the viewer: in review, someone else's, which the
        viewer may approve and has not; or approved, which the viewer may apply."""
        who = _identity(viewer)
        with self._context.read() as tx:
            require_project(tx, project)
            count = 0
            for stored in tx.list_records(CHANGE_REQUESTS, where={"project": project}):
                r = self._shown(tx, stored)
                if r.state is _D.IN_REVIEW:
                    may = _may(viewer, Permission.APPROVE_CHANGE_REQUEST, r)
                    mine = _is_author(r, who) or any(_same_person(a, who) for a in r.approvals)
                    count += may and not mine
                elif r.state is _D.APPROVED:
                    count += _may(viewer, Permission.APPLY_CHANGE_REQUEST, r)
            return count

    def scheduled_change_requests(
        self, project: str, features: Sequence[str] = ()
    ) -> list[ChangeRequest]:
        """Scheduled requests of the project (pending or failed), those changing one of
        ``features`` when any are named."""
        wanted = set(features)
        with self._context.read() as tx:
            require_project(tx, project)
            return [
                r
                for r in tx.list_records(CHANGE_REQUESTS, where={"project": project})
                if r.state is _D.SCHEDULED
                and (not wanted or any(c.feature in wanted for c in r.changes))
            ]

    def available_reviewers(self, project: str, environment: str) -> list[Any]:
        """Users who may approve in ``environment`` of ``project``."""
        with self._context.read() as tx:
            require_project(tx, project)
            require_environment(tx, environment)
            return [
                user
                for user in tx.list_records(USERS)
                if not user.disabled
                and principal_in(tx, user).may(
                    Permission.APPROVE_CHANGE_REQUEST, project=project, environment=environment
                )
            ]

    def segment_draft_targets(self, segment_ids: Sequence[int]) -> dict[int, tuple[str, str]]:
        """Where a change of each segment held back by change requests is drafted: the
        (project, environment) of an active flag's strategy using it where they are on
        (what refuses the direct change), an environment of type production first.
        Segments not held back (or unknown) are left out. One read for all of them."""
        targets: dict[int, tuple[str, str]] = {}
        with self._context.read() as tx:
            environments = tx.list_environments()
            types = {e.name: e.type for e in environments}
            order = {e.name: i for i, e in enumerate(environments)}
            for segment_id in segment_ids:
                held = []
                for placement in tx.strategies_using_segment(segment_id):
                    flag = tx.get_flag(placement.flag)
                    if flag is None or flag.archived:
                        continue
                    where = (flag.project, placement.environment)
                    if where not in held and change_requests_on(tx, *where):
                        held.append(where)
                held.sort(key=lambda h: order.get(h[1], len(order)))
                production = [h for h in held if types.get(h[1]) == "production"]
                if held:
                    targets[segment_id] = (production or held)[0]
        return targets

    def flag_end_states(
        self, project: str, request_id: int
    ) -> tuple[ChangeRequest, list[FlagEndState]]:
        """Each flag of a request not closed yet, as its changes would leave it: applied
        flag by flag in a unit of work that is rolled back (the checks of applying run;
        nothing is written). Refused (409) once the request is closed."""
        with self._context.read() as tx:
            request = _request(tx, project, request_id)
        if request.state in CLOSED_STATES:
            raise Conflict(
                f"change request {request_id} is {request.state.value}: "
                "there is nothing left to preview"
            )
        by_flag: dict[str, list[Change]] = {}
        for change in request.changes:
            if change.feature and change.action not in SEGMENT_ACTIONS:
                by_flag.setdefault(change.feature, []).append(change)
        states = []
        for flag, changes in by_flag.items():
            actions = tuple(c.action for c in changes)
            if ChangeAction.ARCHIVE_FEATURE in actions or CONFIG_ACTIONS.isdisjoint(actions):
                states.append(FlagEndState(flag, actions, None))
                continue
            try:
                proposed = self._tried(request, flag, changes)
            except FlagcoreError as error:
                states.append(FlagEndState(flag, actions, None, error.message))
                continue
            states.append(FlagEndState(flag, actions, proposed))
        return request, states

    # --- drafting ---
    def add_changes(
        self,
        project: str,
        environment: str,
        changes: Sequence[DraftChange],
        *,
        actor: Actor = SYSTEM,
    ) -> ChangeRequest:
        """Add ``changes`` to the actor's draft for ``environment`` (made if need be)."""
        name = authorize(actor, "add_changes", project=project, environment=environment)
        who = _identity(actor)
        with self._context.read() as tx:
            require_project(tx, project)
            earlier = _draft_of(tx, project, environment, who)
        if earlier is not None:
            _check_room(len(earlier.changes) + len(changes))
        parsed = self._checked(
            project, environment, changes, actor, earlier.changes if earlier else ()
        )
        with self._context.unit() as tx:
            settings = _settings_on(tx, project, environment)
            draft = _draft_of(tx, project, environment, who)
            now = self._context.clock()
            if draft is None:
                made = tx.create_record(
                    CHANGE_REQUESTS,
                    ChangeRequest(
                        0,
                        project,
                        environment,
                        "",
                        _D.DRAFT,
                        name,
                        who[1],
                        now,
                        settings.required_approvals,
                        updated_at=now,
                    ),
                )
                draft = attrs.evolve(made, title=f"Change request #{made.id}")
                self._context.record_event(
                    tx,
                    "change-request-created",
                    name,
                    project=project,
                    environment=environment,
                    data=IdData(draft.id),
                )
            _check_room(len(draft.changes) + len(parsed))
            next_id = max((c.id for c in draft.changes), default=0) + 1
            added = []
            for offset, (feature, segment, action, payload) in enumerate(parsed):
                added.append(
                    self._change(tx, next_id + offset, feature, segment, action, payload, name)
                )
                self._context.record_event(
                    tx,
                    "change-added",
                    name,
                    project=project,
                    environment=environment,
                    data=ChangeAddedData(draft.id, feature, action.value),
                )
            draft = attrs.evolve(draft, changes=(*draft.changes, *added), updated_at=now)
            tx.save_record(CHANGE_REQUESTS, draft)
        return draft

    def edit_change(
        self,
        project: str,
        request_id: int,
        change_id: int,
        change: DraftChange,
        *,
        actor: Actor = SYSTEM,
    ) -> ChangeRequest:
        """Replace a change of one's own open request (drafted again: its baseline is now,
        approvals given so far are withdrawn, as the request they approved changed)."""
        name = authorize(actor, "edit_change", project=project)
        with self._context.read() as tx:
            request = _request(tx, project, request_id)
        before = tuple(c for c in request.changes if c.id < change_id)
        parsed = self._checked(project, request.environment, [change], actor, before)[0]
        with self._context.unit() as tx:
            request = self._own_editable(tx, project, request_id, actor)
            _find_change(request, change_id)
            feature, segment, action, payload = parsed
            replaced = self._change(tx, change_id, feature, segment, action, payload, name)
            changes = tuple(replaced if c.id == change_id else c for c in request.changes)
            after = self._reopened(request, changes)
            tx.save_record(CHANGE_REQUESTS, after)
            self._event(tx, "change-edited", name, after, ChangeIdNote(change_id))
        return after

    def discard_change(
        self, project: str, request_id: int, change_id: int, *, actor: Actor = SYSTEM
    ) -> ChangeRequest | None:
        """Take a change out of one's own open request; a draft left empty is deleted
        (None)."""
        name = authorize(actor, "discard_change", project=project)
        with self._context.unit() as tx:
            request = self._own_editable(tx, project, request_id, actor)
            _find_change(request, change_id)
            changes = tuple(c for c in request.changes if c.id != change_id)
            self._event(tx, "change-discarded", name, request, ChangeIdNote(change_id))
            if not changes and request.state is _D.DRAFT:
                tx.delete_record(CHANGE_REQUESTS, request.id)
                return None
            after = self._reopened(request, changes)
            tx.save_record(CHANGE_REQUESTS, after)
        return after

    def discard_draft(self, project: str, request_id: int, *, actor: Actor = SYSTEM) -> None:
        name = authorize(actor, "discard_draft", project=project)
        with self._context.unit() as tx:
            request = self._own_editable(tx, project, request_id, actor)
            if request.state is not _D.DRAFT:
                raise Conflict(
                    f"change request {request_id} is {request.state.value}, not a draft: "
                    "cancel it instead"
                )
            tx.delete_record(CHANGE_REQUESTS, request_id)
            self._event(tx, "change-request-discarded", name, request, None)

    def set_change_request_title(
        self, project: str, request_id: int, title: str, *, actor: Actor = SYSTEM
    ) -> ChangeRequest:
        name = authorize(actor, "set_change_request_title", project=project)
        if not title.strip():
            raise InvalidInput("a title is required", [ErrorDetail("empty", "$.title")])
        check_text(title, "$.title")
        with self._context.unit() as tx:
            request = self._own_editable(tx, project, request_id, actor)
            after = attrs.evolve(request, title=title, updated_at=self._context.clock())
            tx.save_record(CHANGE_REQUESTS, after)
            self._event(tx, "change-request-title-updated", name, after, TitleNote(title))
        return after

    def set_change_request_reviewers(
        self, project: str, request_id: int, reviewers: Sequence[int], *, actor: Actor = SYSTEM
    ) -> ChangeRequest:
        name = authorize(actor, "set_change_request_reviewers", project=project)
        with self._context.unit() as tx:
            request = self._own_editable(tx, project, request_id, actor)
            for index, user_id in enumerate(reviewers):
                if tx.get_record(USERS, user_id) is None:
                    raise NotFound(
                        f"there is no user with id {user_id}",
                        [ErrorDetail("unknown user", f"$.reviewers[{index}]")],
                    )
            after = attrs.evolve(request, reviewers=tuple(dict.fromkeys(reviewers)))
            tx.save_record(CHANGE_REQUESTS, after)
            self._context.record_event(
                tx,
                "change-request-requested-approvers-updated",
                name,
                project=after.project,
                environment=after.environment,
                data=ChangeRequestReviewersData(after.id, after.state, tuple(reviewers)),
            )
        return after

    def comment_change_request(
        self, project: str, request_id: int, text: str, *, actor: Actor = SYSTEM
    ) -> ChangeRequest:
        name = authorize(actor, "comment_change_request", project=project)
        if not text.strip():
            raise InvalidInput("a comment needs text", [ErrorDetail("empty", "$.text")])
        check_text(text, "$.text")
        who = _identity(actor)
        with self._context.unit() as tx:
            request = _request(tx, project, request_id)
            if len(request.comments) >= MAX_COMMENTS:
                raise LimitExceeded(
                    f"a change request holds at most {MAX_COMMENTS} comments",
                    "comments_per_request",
                    MAX_COMMENTS,
                )
            after = _commented(request, text, who, self._context.clock())
            tx.save_record(CHANGE_REQUESTS, after)
            self._event(tx, "change-request-comment-added", name, after, TextNote(text))
        return after

    # --- states ---
    def submit_change_request(
        self, project: str, request_id: int, *, actor: Actor = SYSTEM
    ) -> ChangeRequest:
        """Draft → In review: the author asks for approval."""
        name = authorize(actor, "submit_change_request", project=project)
        with self._context.unit() as tx:
            request = self._own_editable(tx, project, request_id, actor)
            _require_state(request, {_D.DRAFT}, _D.IN_REVIEW)
            if not request.changes:
                raise Conflict("a change request without changes cannot be sent to review")
            after = self._moved(request, _D.IN_REVIEW)
            tx.save_record(CHANGE_REQUESTS, after)
            self._event(tx, "change-request-sent-to-review", name, after, None)
        return after

    def approve_change_request(
        self,
        project: str,
        request_id: int,
        *,
        comment: str | None = None,
        actor: Actor = SYSTEM,
    ) -> ChangeRequest:
        """An approval by someone other than the author; enough of them make it Approved."""
        with self._context.unit() as tx:
            request = self._shown(tx, _request(tx, project, request_id))
            name = authorize(
                actor,
                "approve_change_request",
                project=project,
                environment=request.environment,
            )
            who = _identity(actor)
            _require_state(request, {_D.IN_REVIEW, _D.APPROVED}, _D.APPROVED)
            if _is_author(request, who):
                raise Forbidden("You cannot approve your own change request.")
            if any(_same_person(review, who) for review in request.approvals):
                raise Conflict("You have already approved this change request.")
            now = self._context.clock()
            after = attrs.evolve(
                request, approvals=(*request.approvals, Review(who[0], who[1], now))
            )
            if comment:
                after = _commented(after, comment, who, now)
            enough = self._counted_approvals(tx, after) >= after.min_approvals
            said = CommentNote(comment) if comment else None
            if enough and after.state is _D.IN_REVIEW:
                after = self._moved(after, _D.APPROVED)
                self._event(tx, "change-request-approved", name, after, said)
            else:
                self._event(tx, "change-request-approval-added", name, after, said)
            tx.save_record(CHANGE_REQUESTS, after)
        return after

    def reject_change_request(
        self,
        project: str,
        request_id: int,
        *,
        comment: str | None = None,
        actor: Actor = SYSTEM,
    ) -> ChangeRequest:
        with self._context.unit() as tx:
            request = _request(tx, project, request_id)
            name = authorize(
                actor, "reject_change_request", project=project, environment=request.environment
            )
            who = _identity(actor)
            _require_state(request, {_D.IN_REVIEW, _D.APPROVED, _D.SCHEDULED}, _D.REJECTED)
            if _is_author(request, who):
                raise Forbidden("You cannot reject your own change request; cancel it instead.")
            now = self._context.clock()
            after = attrs.evolve(
                request, rejections=(*request.rejections, Review(who[0], who[1], now))
            )
            if comment:
                after = _commented(after, comment, who, now)
            after = self._moved(after, _D.REJECTED)
            tx.save_record(CHANGE_REQUESTS, after)
            said = CommentNote(comment) if comment else None
            self._event(tx, "change-request-rejected", name, after, said)
        return after

    def cancel_change_request(
        self, project: str, request_id: int, *, actor: Actor = SYSTEM
    ) -> ChangeRequest:
        name = authorize(actor, "cancel_change_request", project=project)
        with self._context.unit() as tx:
            request = _request(tx, project, request_id)
            if not isinstance(actor, str) and not _is_author(request, _identity(actor)):
                raise Forbidden("Only the author can cancel a change request.")
            _require_state(request, set(_D) - CLOSED_STATES, _D.CANCELLED)
            after = self._moved(request, _D.CANCELLED)
            tx.save_record(CHANGE_REQUESTS, after)
            self._event(tx, "change-request-cancelled", name, after, None)
        return after

    def schedule_change_request(
        self,
        project: str,
        request_id: int,
        scheduled_at: dt.datetime,
        *,
        actor: Actor = SYSTEM,
    ) -> ChangeRequest:
        """Approved (or Scheduled, to move the time) → Scheduled at ``scheduled_at``."""
        with self._context.unit() as tx:
            request = _request(tx, project, request_id)
            name = authorize(
                actor, "schedule_change_request", project=project, environment=request.environment
            )
            _require_state(request, {_D.APPROVED, _D.SCHEDULED}, _D.SCHEDULED)
            if scheduled_at <= self._context.clock():
                raise InvalidInput(
                    "a change request is scheduled for a time to come",
                    [ErrorDetail("in the past", "$.scheduledAt")],
                )
            after = attrs.evolve(
                self._moved(request, _D.SCHEDULED),
                scheduled_at=scheduled_at,
                schedule_failure=None,
                scheduled_by=name,
            )
            tx.save_record(CHANGE_REQUESTS, after)
            self._event(
                tx,
                "change-request-scheduled",
                name,
                after,
                ScheduleNote(scheduled_at.isoformat()),
            )
        return after

    def apply_change_request(
        self, project: str, request_id: int, *, actor: Actor = SYSTEM
    ) -> ChangeRequest:
        """Every change, in one unit of work: all of them or none. Refused (409) while a
        change conflicts or approvals are missing."""
        with self._context.unit() as tx:
            request = _request(tx, project, request_id)
            name = authorize(
                actor, "apply_change_request", project=project, environment=request.environment
            )
            return self._applied(tx, request, name)

    # --- schedules ---
    def due_change_requests(self) -> list[tuple[str, int]]:
        """(project, id) of each scheduled request whose time has come and that has not
        failed: what the server's schedule runner applies."""
        now = self._context.clock()
        with self._context.read() as tx:
            scheduled = tx.list_records(CHANGE_REQUESTS, where={"state": _D.SCHEDULED})
            return [
                (r.project, r.id)
                for r in scheduled
                if r.scheduled_at is not None
                and r.scheduled_at <= now
                and r.schedule_failure is None
            ]

    def apply_scheduled_change_request(self, project: str, request_id: int) -> ChangeRequest | None:
        """Apply one due scheduled request, exactly once however many nodes try: its state
        is read again inside the unit of work, and every store runs write units one at a
        time (SQLite's single writer, PostgreSQL's write lock), so only the first finds it
        still Scheduled. Applied in the name of who scheduled it, with the delay in the
        event (a server that was down at that time applies it at its next start). If it
        cannot be applied (a conflict, a deleted flag), nothing is written but the failure:
        the request stays Scheduled, marked failed with the reason. None when nothing was
        applied."""
        now = self._context.clock()
        try:
            with self._context.unit() as tx:
                request = _due(tx, project, request_id, now)
                if request is None:
                    return None
                name = request.scheduled_by or SYSTEM
                after = self._applied(tx, request, name)
                self._event(
                    tx,
                    "change-request-scheduled-application-success",
                    name,
                    after,
                    _delay(request, now),
                )
                return after
        except FlagcoreError as error:
            with self._context.unit() as tx:
                request = _due(tx, project, request_id, now)
                if request is None:
                    return None
                reason = _reason(error)
                failed = attrs.evolve(request, schedule_failure=reason, updated_at=now)
                tx.save_record(CHANGE_REQUESTS, failed)
                self._event(
                    tx,
                    "change-request-scheduled-application-failure",
                    request.scheduled_by or SYSTEM,
                    failed,
                    attrs.evolve(_delay(request, now), reason=reason),
                )
            return None

    # --- inner steps ---
    def _applied(self, tx: _Applying, request: ChangeRequest, name: str) -> ChangeRequest:
        _require_state(request, {_D.APPROVED, _D.SCHEDULED}, _D.APPLIED)
        counted = self._counted_approvals(tx, request)
        if counted < request.min_approvals:
            raise Conflict(
                f"change request {request.id} has {counted} of the "
                f"{request.min_approvals} approvals it needs"
            )
        conflicts = self._conflicts(tx, request)
        if conflicts:
            raise Conflict(
                f"change request {request.id} conflicts with changes made since it was "
                "drafted: discard or redo the changes named",
                [ErrorDetail(f"change {i}: {text}") for i, text in sorted(conflicts.items())],
            )
        for change in request.changes:
            payload = read_payload(change.action, change.payload)
            self._apply(tx, request.project, request.environment, change, payload, name)
        after = self._moved(request, _D.APPLIED)
        tx.save_record(CHANGE_REQUESTS, after)
        self._event(tx, "change-request-applied", name, after, None)
        return after

    def _checked(
        self,
        project: str,
        environment: str,
        changes: Sequence[DraftChange],
        actor: Actor,
        earlier: Sequence[Change] = (),
    ) -> list[tuple[str | None, int | None, ChangeAction, Any]]:
        """Each change read, its direct permission checked, and all of them tried (then
        rolled back) through the direct write methods, after the request's ``earlier``
        changes, as applying will run them (a segment's deletion drafted after the
        removal of its last use goes through); when an earlier change no longer applies
        as it stands (it shows a conflict), the new ones are tried on their own."""
        if not changes:
            raise InvalidInput("no change given", [ErrorDetail("empty list", "$")])
        _check_room(len(changes))
        parsed = []
        for change in changes:
            action = _action(change)
            payload = read_payload(action, change.payload, f"{change.path}.payload")
            authorize(actor, DIRECT_OPERATIONS[action], project=project, environment=environment)
            segment = None
            if action in SEGMENT_ACTIONS:
                assert isinstance(payload, (SegmentPayload, SegmentIdPayload))
                segment = payload.id
            elif not change.feature:
                raise InvalidInput(
                    f"the {action.value} change names no flag",
                    [ErrorDetail("required field missing", f"{change.path}.feature")],
                )
            feature = None if action in SEGMENT_ACTIONS else change.feature
            keeps = action is ChangeAction.UPDATE_STRATEGY and "segments" not in change.payload
            parsed.append((feature, segment, action, payload, change.path, keeps))
        if earlier:
            try:
                return self._trial(project, environment, parsed, earlier)
            except _EarlierFailed:
                pass
        return self._trial(project, environment, parsed, ())

    def _trial(
        self,
        project: str,
        environment: str,
        parsed: Sequence[tuple[str | None, int | None, ChangeAction, Any, str, bool]],
        earlier: Sequence[Change],
    ) -> list[tuple[str | None, int | None, ChangeAction, Any]]:
        """The new changes applied after ``earlier`` in a unit of work rolled back."""
        checked = []
        try:
            with self._context.unit() as tx:
                _settings_on(tx, project, environment)
                for change in earlier:
                    try:
                        payload = read_payload(change.action, change.payload)
                        self._apply(tx, project, environment, change, payload, "trial")
                    except FlagcoreError as exc:
                        raise _EarlierFailed from exc
                for feature, segment, action, payload, path, keeps in parsed:
                    if keeps:
                        # As the direct update: a strategy sent without segments keeps its own.
                        placement = tx.get_strategy(payload.id or "")
                        if placement is not None:
                            payload = attrs.evolve(payload, segments=placement.strategy.segments)
                    if action is ChangeAction.DELETE_SEGMENT:
                        payload = _named(tx, payload, f"{path}.payload.name")
                    checked.append((feature, segment, action, payload))
                    trial = Change(0, feature, segment, action, None, "", _EPOCH, "", 0)
                    try:
                        self._apply(tx, project, environment, trial, payload, "trial")
                    except FlagcoreError as exc:
                        raise _rooted(exc, f"{path}.payload") from exc
                raise _TrialDone
        except _TrialDone:
            pass
        return checked

    def _tried(self, request: ChangeRequest, flag: str, changes: list[Change]) -> ProposedChange:
        """``flag``'s environment config after ``changes``, applied then rolled back."""
        environment = request.environment
        try:
            with self._context.unit() as tx:
                for change in changes:
                    payload = read_payload(change.action, change.payload)
                    self._apply(tx, request.project, environment, change, payload, "preview")
                state = tx.get_flag_environment(flag, environment)
                placements = tx.list_strategies(flag=flag, environment=environment)
                proposed = ProposedChange(
                    enabled=state is not None and state.enabled,
                    strategies=tuple(p.strategy for p in placements),
                    variants=state.variants if state is not None else (),
                )
                raise _TrialDone
        except _TrialDone:
            pass
        return proposed

    def _apply(
        self,
        tx: KeptRulesWrite,
        project: str,
        environment: str,
        change: Change,
        payload: Any,
        actor: str,
    ) -> None:
        flag = change.feature or ""
        action = change.action
        if action is ChangeAction.UPDATE_ENABLED:
            assert isinstance(payload, EnabledPayload)
            self._environments.set_environment_enabled_in(
                tx, project, flag, environment, payload.enabled, actor=actor
            )
        elif action is ChangeAction.ADD_STRATEGY:
            assert isinstance(payload, Strategy)
            self._strategies.add_strategy_in(
                tx, project, flag, environment, attrs.evolve(payload, id=None), actor=actor
            )
        elif action is ChangeAction.UPDATE_STRATEGY:
            assert isinstance(payload, Strategy)
            if not payload.id:
                raise InvalidInput(
                    "updateStrategy names the strategy by its id",
                    [ErrorDetail("required field missing", "$.id")],
                )
            self._strategies.update_strategy_in(
                tx, project, flag, environment, payload.id, payload, actor=actor
            )
        elif action is ChangeAction.DELETE_STRATEGY:
            assert isinstance(payload, StrategyIdPayload)
            self._strategies.delete_strategy_in(
                tx, project, flag, environment, payload.id, actor=actor
            )
        elif action is ChangeAction.REORDER_STRATEGY:
            assert isinstance(payload, tuple)
            order = {item.id: item.sort_order for item in payload}
            assert all(isinstance(item, StrategyOrderPayload) for item in payload)
            self._strategies.reorder_strategies_in(
                tx, project, flag, environment, order, actor=actor
            )
        elif action is ChangeAction.PATCH_VARIANT:
            assert isinstance(payload, VariantsPayload)
            self._variants.set_flag_variants_in(
                tx, project, flag, environment, payload.variants, actor=actor
            )
        elif action is ChangeAction.ARCHIVE_FEATURE:
            self._archive.archive_flag_in(tx, project, flag, actor=actor)
        elif action is ChangeAction.ADD_DEPENDENCY:
            assert isinstance(payload, Dependency)
            self._dependencies.set_dependencies_in(tx, project, flag, [payload], actor=actor)
        elif action is ChangeAction.DELETE_DEPENDENCY:
            self._dependencies.set_dependencies_in(tx, project, flag, [], actor=actor)
        elif action is ChangeAction.UPDATE_SEGMENT:
            assert isinstance(payload, SegmentPayload)
            self._segments.update_segment_in(
                tx,
                payload.id,
                payload.name,
                payload.constraints,
                description=payload.description,
                project=payload.project,
                actor=actor,
            )
        elif action is ChangeAction.DELETE_SEGMENT:
            assert isinstance(payload, SegmentIdPayload)
            self._segments.delete_segment_in(tx, payload.id, actor=actor)
        else:
            self._apply_release_plan(tx, project, environment, flag, action, payload, actor)

    def _apply_release_plan(
        self,
        tx: KeptRulesWrite,
        project: str,
        environment: str,
        flag: str,
        action: ChangeAction,
        payload: Any,
        actor: str,
    ) -> None:
        """A release plan's change, by the plan service's own steps (issue 32's actions,
        on Unleash's change names and payloads)."""
        plans = self._release_plans
        where = (tx, project, flag, environment)
        if action is ChangeAction.ADD_RELEASE_PLAN:
            assert isinstance(payload, TemplateIdPayload)
            plans.add_release_plan_in(*where, payload.template_id, actor=actor)
        elif action is ChangeAction.DELETE_RELEASE_PLAN:
            assert isinstance(payload, PlanIdPayload)
            plans.remove_release_plan_in(*where, payload.plan_id, actor=actor)
        elif action is ChangeAction.START_MILESTONE:
            assert isinstance(payload, MilestoneIdPayload)
            plans.start_release_plan_milestone_in(*where, None, payload.milestone_id, actor=actor)
        elif action is ChangeAction.CHANGE_MILESTONE_PROGRESSION:
            assert isinstance(payload, ProgressionPayload)
            plans.change_milestone_progression_in(
                *where,
                payload.source_milestone,
                payload.target_milestone,
                payload.transition_condition.interval_minutes,
                actor=actor,
            )
        elif action is ChangeAction.DELETE_MILESTONE_PROGRESSION:
            assert isinstance(payload, SourceMilestonePayload)
            plans.delete_milestone_progression_in(*where, payload.source_milestone, actor=actor)
        elif action is ChangeAction.RESUME_MILESTONE_PROGRESSION:
            assert isinstance(payload, PlanIdPayload)
            plans.resume_milestone_progressions_in(*where, payload.plan_id, actor=actor)
        elif action is ChangeAction.CHANGE_SAFEGUARD:
            assert isinstance(payload, SafeguardChangePayload)
            given = payload.safeguard
            metric = given.impact_metric
            try:
                safeguard = checked_safeguard(
                    metric.metric_name,
                    metric.aggregation_mode,
                    given.trigger_condition.operator,
                    given.trigger_condition.threshold,
                    metric.window_minutes,
                    time_range=metric.time_range,
                    action=given.action.type if given.action else "pausePlan",
                    ratio_of=metric.ratio_of,
                )
            except FlagcoreError as error:
                raise rooted(error, "$.safeguard") from error
            plans.put_release_plan_safeguard_in(*where, payload.plan_id, safeguard, actor=actor)
        else:
            assert isinstance(payload, SafeguardIdPayload)
            plans.delete_release_plan_safeguard_in(
                *where, payload.plan_id, payload.safeguard_id, actor=actor
            )

    def _change(
        self,
        tx: _Subjects,
        change_id: int,
        feature: str | None,
        segment: int | None,
        action: ChangeAction,
        payload: Any,
        name: str,
    ) -> Change:
        newest = tx.list_events(limit=1)
        return Change(
            change_id,
            feature,
            segment,
            action,
            write_payload(action, payload),
            name,
            self._context.clock(),
            _digest(tx, feature, segment, action),
            newest[0].id if newest else 0,
        )

    def _conflicts(self, tx: _Subjects, request: ChangeRequest) -> dict[int, str]:
        if request.state in CLOSED_STATES:
            return {}
        found = {}
        for change in request.changes:
            now = _digest(tx, change.feature, change.segment, change.action)
            if now != change.baseline:
                found[change.id] = _what_changed(tx, request, change)
        return found

    def _view(self, tx: _Review, request: ChangeRequest) -> ChangeRequestView:
        counted = self._counted_approvals(tx, request)
        shown = _shown_as(request, counted)
        return ChangeRequestView(shown, self._conflicts(tx, request), counted)

    def _shown(self, tx: Records, request: ChangeRequest) -> ChangeRequest:
        """The request as it stands now (`_shown_as`)."""
        if request.state is not _D.APPROVED:
            return request
        return _shown_as(request, self._counted_approvals(tx, request))

    def _counted_approvals(self, tx: Records, request: ChangeRequest) -> int:
        """Distinct people who approved and may approve there still (a person whose role
        was taken away, or who was disabled, no longer counts)."""
        counted = 0
        for review in request.approvals:
            if review.user_id is None:
                counted += 1  # an admin token: Admin
                continue
            user = tx.get_record(USERS, review.user_id)
            if user is None or user.disabled:
                continue
            if principal_in(tx, user).may(
                Permission.APPROVE_CHANGE_REQUEST,
                project=request.project,
                environment=request.environment,
            ):
                counted += 1
        return counted

    def _own_editable(
        self, tx: _ProjectRecords, project: str, request_id: int, actor: Actor
    ) -> ChangeRequest:
        request = _request(tx, project, request_id)
        if not isinstance(actor, str) and not _is_author(request, _identity(actor)):
            raise Forbidden("Only the author can change a change request.")
        if request.state not in (_D.DRAFT, _D.IN_REVIEW, _D.APPROVED):
            raise Conflict(f"change request {request_id} is {request.state.value}: it is settled")
        return request

    def _reopened(self, request: ChangeRequest, changes: tuple[Change, ...]) -> ChangeRequest:
        """The request with other changes: approvals given to the old ones are withdrawn."""
        after = attrs.evolve(
            request, changes=changes, approvals=(), updated_at=self._context.clock()
        )
        if after.state is _D.APPROVED:
            after = attrs.evolve(after, state=_D.IN_REVIEW)
        return after

    def _moved(self, request: ChangeRequest, state: ChangeRequestState) -> ChangeRequest:
        return attrs.evolve(request, state=state, updated_at=self._context.clock())

    def _event(
        self,
        tx: EventLog,
        type: str,
        actor: str,
        request: ChangeRequest,
        note: ChangeRequestNote | None,
    ) -> None:
        self._context.record_event(
            tx,
            type,
            actor,
            project=request.project,
            environment=request.environment,
            data=ChangeRequestData(request.id, request.state, note),
        )


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _check_room(changes: int) -> None:
    if changes > MAX_CHANGES:
        raise LimitExceeded(
            f"a change request holds at most {MAX_CHANGES} changes",
            "changes_per_request",
            MAX_CHANGES,
        )


def _shown_as(request: ChangeRequest, counted: int) -> ChangeRequest:
    """An Approved request whose approvals no longer count enough (an approver disabled,
    or no longer holding the permission there) is In review again, as applying it would
    be refused; an approval of someone who may approve makes it Approved again. Derived
    when read: the change that caused it (a role, a user disabled) is its own event."""
    if request.state is _D.APPROVED and counted < request.min_approvals:
        return attrs.evolve(request, state=_D.IN_REVIEW)
    return request


def _settings_on(tx: _ProjectRecords, project: str, environment: str) -> ChangeRequestSettings:
    require_project(tx, project)
    require_environment(tx, environment)
    settings = tx.get_record(CHANGE_REQUEST_SETTINGS, (project, environment))
    if settings is None or not change_requests_on(tx, project, environment):
        raise Conflict(
            f"change requests are not enabled in project '{project}', "
            f"environment '{environment}': change it directly"
        )
    result: ChangeRequestSettings = settings
    return result


def _draft_of(
    tx: Records, project: str, environment: str, who: tuple[str, int | None]
) -> ChangeRequest | None:
    """``who``'s draft for that project and environment (one at most)."""
    found: ChangeRequest | None = next(
        (
            r
            for r in tx.list_records(CHANGE_REQUESTS, where={"project": project})
            if r.state is _D.DRAFT and r.environment == environment and _is_author(r, who)
        ),
        None,
    )
    return found


def _named(tx: SegmentRepository, payload: SegmentIdPayload, path: str) -> SegmentIdPayload:
    """A deletion with the name of the segment it deletes; a name sent that is not the
    segment's is refused (the id is what would be deleted)."""
    found = tx.get_segment(payload.id)
    if found is None:
        return payload  # the trial says it is not found
    if payload.name is not None and payload.name != found.name:
        raise InvalidInput(
            f'segment {payload.id} is named "{found.name}", not as sent',
            [ErrorDetail(f'segment {payload.id} is "{found.name}"', path)],
        )
    return attrs.evolve(payload, name=found.name)


MAX_REASON = 2000
"""Characters of a failed schedule's reason kept (the error and what its details say)."""


def _reason(error: FlagcoreError) -> str:
    """Why applying failed: the error with its details (which change conflicts, with
    what and by whom), bounded."""
    said = "; ".join(d.message for d in error.details if d.message)
    reason = f"{error.message} ({said})" if said else error.message
    return reason if len(reason) <= MAX_REASON else reason[: MAX_REASON - 1] + "…"


def _due(tx: Records, project: str, request_id: int, now: dt.datetime) -> ChangeRequest | None:
    request: ChangeRequest | None = tx.get_record(CHANGE_REQUESTS, request_id)
    if (
        request is None
        or request.project != project
        or request.state is not _D.SCHEDULED
        or request.scheduled_at is None
        or request.scheduled_at > now
        or request.schedule_failure is not None
    ):
        return None
    return request


def _delay(request: ChangeRequest, now: dt.datetime) -> ScheduleNote:
    assert request.scheduled_at is not None
    late = (now - request.scheduled_at).total_seconds()
    return ScheduleNote(request.scheduled_at.isoformat(), round(late, 3))


def _request(tx: _ProjectRecords, project: str, request_id: int) -> ChangeRequest:
    require_project(tx, project)
    request: ChangeRequest | None = tx.get_record(CHANGE_REQUESTS, request_id)
    if request is None or request.project != project:
        raise NotFound(f"there is no change request {request_id} in project '{project}'")
    return request


def _find_change(request: ChangeRequest, change_id: int) -> Change:
    for change in request.changes:
        if change.id == change_id:
            return change
    raise NotFound(f"change request {request.id} has no change {change_id}")


def _action(change: DraftChange) -> ChangeAction:
    try:
        return ChangeAction(change.action)
    except ValueError:
        known = ", ".join(a.value for a in ChangeAction)
        raise InvalidInput(
            f"unknown change action {change.action!r}",
            [ErrorDetail(f"expected one of {known}", f"{change.path}.action")],
        ) from None


def _rooted(exc: FlagcoreError, path: str) -> FlagcoreError:
    """``exc`` with its detail paths (``$...``) under ``path``, when its class can be made
    again from a message and details."""
    if type(exc) not in (InvalidInput, NotFound, Conflict, NameConflict, Forbidden):
        return exc
    details = [
        attrs.evolve(d, path=path + d.path[1:]) if d.path and d.path.startswith("$") else d
        for d in exc.details
    ]
    return type(exc)(exc.message, details)


def _identity(actor: Actor) -> tuple[str, int | None]:
    """(the event log's name, the user id) of an actor."""
    if isinstance(actor, Principal):
        return actor.actor, actor.user_id
    return actor, None


def _may(viewer: Actor, permission: Permission, request: ChangeRequest) -> bool:
    if isinstance(viewer, str):
        return True
    return viewer.may(permission, project=request.project, environment=request.environment)


def _is_author(request: ChangeRequest, who: tuple[str, int | None]) -> bool:
    if who[1] is not None and request.created_by_id is not None:
        return who[1] == request.created_by_id
    return who[0] == request.created_by


def _same_person(review: Review, who: tuple[str, int | None]) -> bool:
    if who[1] is not None and review.user_id is not None:
        return who[1] == review.user_id
    return who[0] == review.actor


def _require_state(
    request: ChangeRequest, allowed: set[ChangeRequestState], target: ChangeRequestState
) -> None:
    if request.state not in allowed:
        raise Conflict(
            f"change request {request.id} is {request.state.value}: it cannot become {target.value}"
        )


def _commented(
    request: ChangeRequest, text: str, who: tuple[str, int | None], now: dt.datetime
) -> ChangeRequest:
    comment_id = max((c.id for c in request.comments), default=0) + 1
    comment = Comment(comment_id, text, who[0], who[1], now)
    return attrs.evolve(request, comments=(*request.comments, comment))


def _digest(tx: _Subjects, feature: str | None, segment: int | None, action: ChangeAction) -> str:
    """What a change is about, as it is now: a flag with its rules in every environment
    and its dependencies, or a segment."""
    if action in SEGMENT_ACTIONS:
        state: Any = tx.get_segment(segment) if segment is not None else None
    else:
        flag = tx.get_flag(feature or "")
        if flag is None:
            state = None
        else:
            state = (
                flag.archived,
                flag.dependencies,
                sorted(
                    (
                        (e.environment, e.enabled, e.variants)
                        for e in _flag_environments(tx, flag.name)
                    ),
                    key=repr,
                ),
                sorted(
                    (repr(p) for p in tx.list_strategies(flag=flag.name)),
                ),
                sorted(repr(p) for p in tx.list_records(RELEASE_PLANS, where={"flag": flag.name})),
            )
    return hashlib.sha256(repr(state).encode()).hexdigest()


def _flag_environments(tx: FlagLookups, flag: str) -> list[Any]:
    return [
        state
        for environment in tx.list_environments()
        if (state := tx.get_flag_environment(flag, environment.name)) is not None
    ]


def _what_changed(tx: EventLog, request: ChangeRequest, change: Change) -> str:
    """Which events since the change was drafted touched what it is about, and by whom."""
    if change.feature is not None:
        subject = f'flag "{change.feature}"'
        events = [
            e
            for e in tx.list_events(limit=100, feature_name=change.feature)
            if e.id > change.baseline_event
        ]
    else:
        subject = f"segment {change.segment}"
        events = [
            e
            for e in tx.list_events(limit=200)
            if e.id > change.baseline_event and e.type.startswith("segment-")
        ]
    said = "; ".join(f"{e.type} by {e.created_by}" for e in reversed(events[:10]))
    return f"{subject} changed since this change was drafted" + (f": {said}" if said else "")
