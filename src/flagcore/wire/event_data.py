"""What each event of the change log carries (its ``data`` and ``preData``), as typed values.

The service records an event with one of these values (`flagcore.service.context.
ServiceContext.record_event`); the event's JSON is written from the rows here by the answer
table's derived writer (`flagcore.wire.answer_table`), so Unleash's JSON names stay in the
wire package. The events API, the UI's event diff, integrations' messages and Slack texts
read that JSON: every type's is pinned by ``tests/service/test_event_data_json.py``.

Where an event's data is an answer already (a tag, a tag type, a strategy parameter, a
legal value, a transition condition), that answer is the value. A key shown only in some
events of a type (an environment's ``clonedFrom``) is a row ``omitted_when_none``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from flagcore.change_requests import ChangeRequestSettings, ChangeRequestState
from flagcore.entities import (
    ContextField,
    FlagDefinition,
    Integration,
    Project,
    StrategyDefinition,
    StrategyParameter,
    Tag,
    TagType,
)
from flagcore.model import Segment, Strategy
from flagcore.people import Group, PersonalToken, User
from flagcore.permissions import Role
from flagcore.release_plans import ReleasePlan, ReleasePlanTemplate
from flagcore.wire.answer_table import ANSWER_FIELDS, AnswerField, answer
from flagcore.wire.import_answers import LegalValueAnswer
from flagcore.wire.release_plan_answers import TransitionConditionAnswer

__all__ = [
    "ActionSetCreatedData",
    "ApiTokenData",
    "ChangeAddedData",
    "ChangeIdNote",
    "ChangeRequestData",
    "ChangeRequestNote",
    "ChangeRequestReviewersData",
    "ChangeRequestSettingsData",
    "CommentNote",
    "ContextFieldData",
    "DependencyNamesData",
    "EnvironmentChangeData",
    "EnvironmentCreatedData",
    "EnvironmentDeletedData",
    "EnvironmentRenamedData",
    "EventData",
    "FeatureTypeData",
    "FlagCompletedData",
    "FlagData",
    "FlagImportedData",
    "GroupData",
    "GroupMemberData",
    "IdData",
    "IdNameData",
    "IntegrationData",
    "MilestoneStartedData",
    "NameData",
    "NamedSwitchData",
    "PasswordChangedData",
    "PermissionData",
    "PersonalTokenData",
    "ProgressionData",
    "ProgressionsPausedData",
    "ProgressionsResumedData",
    "ProjectAccessData",
    "ProjectData",
    "ReleasePlanData",
    "ReleaseTemplateData",
    "ResetLinkData",
    "RoleData",
    "SafeguardData",
    "SampleUploadedData",
    "ScheduleNote",
    "SegmentData",
    "SegmentLinksData",
    "SignalTokenData",
    "StaleReminderData",
    "StrategyData",
    "StrategyDefinitionData",
    "StrategyOrderData",
    "SwitchedOffData",
    "TextNote",
    "TitleNote",
    "TokenNameData",
    "UserData",
    "VariantNamesData",
    "token_name_of",
]


def _same(*attributes: str) -> tuple[AnswerField, ...]:
    """Rows whose key is the attribute's own name."""
    return tuple(AnswerField(name, name) for name in attributes)


def _omitted(attribute: str, key: str | None = None) -> AnswerField:
    """A row shown only when it has a value (events of one type that say more)."""
    return AnswerField(attribute, key or attribute, omitted_when_none=True)


# --- shapes several areas share ---
@answer(*_same("name"))
@attrs.frozen
class NameData:
    """``{"name"}``: what a tag type, a custom strategy or a signal endpoint was."""

    name: str


@answer(*_same("id"))
@attrs.frozen
class IdData:
    """``{"id"}``: a change request drafted."""

    id: int


@answer(*_same("id", "name"))
@attrs.frozen
class IdNameData:
    """``{"id", "name"}``: a signal endpoint or action set, or what a copy of an instance
    made (a project, a segment)."""

    id: int | str
    name: str


@answer(*_same("id", "name", "enabled"))
@attrs.frozen
class NamedSwitchData:
    """``{"id", "name", "enabled"}``: an action set or a signal endpoint switched."""

    id: int
    name: str
    enabled: bool


# --- projects and environments ---
@answer(*_same("id", "name", "description"))
@attrs.frozen
class ProjectData:
    id: str
    name: str
    description: str | None

    @classmethod
    def of(cls, project: Project) -> ProjectData:
        return cls(project.id, project.name, project.description)


@answer(
    AnswerField("type", "type"),
    _omitted("cloned_from", "clonedFrom"),
    _omitted("projects"),
)
@attrs.frozen
class EnvironmentCreatedData:
    """Its type; a clone also says what it was cloned from, for which projects."""

    type: str
    cloned_from: str | None = None
    projects: tuple[str, ...] | None = None


@answer(_omitted("type"), _omitted("sort_order", "sortOrder"), _omitted("enabled"))
@attrs.frozen
class EnvironmentChangeData:
    """What changed of an environment (each of ``data`` and ``preData``)."""

    type: str | None = None
    sort_order: int | None = None
    enabled: bool | None = None


@answer(
    *_same("name", "flags", "strategies"),
    AnswerField("api_tokens", "apiTokens"),
    AnswerField("action_sets", "actionSets"),
    AnswerField("roles", "roles"),
    AnswerField("change_requests", "changeRequests"),
    AnswerField("release_plans", "releasePlans"),
    *_same("integrations", "usage"),
)
@attrs.frozen
class EnvironmentRenamedData:
    """An environment's new name, and how many of each kind of row now name it (SDK
    usage: hour and day buckets and instances); ``preData`` is the old name's `NameData`."""

    name: str
    flags: int
    strategies: int
    api_tokens: int
    action_sets: int
    roles: int
    change_requests: int
    release_plans: int
    integrations: int
    usage: int


@answer(*_same("name", "type", "flags", "strategies"))
@attrs.frozen
class EnvironmentDeletedData:
    """What went with a deleted environment: how many flags' states and strategies."""

    name: str
    type: str
    flags: int
    strategies: int


# --- flags ---
@answer(
    *_same("name", "project", "type", "description", "stale"),
    AnswerField("impression_data", "impressionData"),
)
@attrs.frozen
class FlagData:
    name: str
    project: str
    type: str
    description: str | None
    stale: bool
    impression_data: bool

    @classmethod
    def of(cls, flag: FlagDefinition) -> FlagData:
        return cls(
            flag.name, flag.project, flag.type, flag.description, flag.stale, flag.impression_data
        )


@answer(*_same("id", "name", "parameters", "constraints", "segments", "disabled"))
@attrs.frozen
class StrategyData:
    """A strategy in an event: its constraints counted, not listed."""

    id: str | None
    name: str
    parameters: Mapping[str, str]
    constraints: int
    segments: tuple[int, ...]
    disabled: bool

    @classmethod
    def of(cls, strategy: Strategy) -> StrategyData:
        return cls(
            strategy.id,
            strategy.name,
            strategy.parameters,
            len(strategy.constraints),
            strategy.segments,
            strategy.disabled,
        )


@answer(AnswerField("order", "order", spread=True))
@attrs.frozen
class StrategyOrderData:
    """``{strategy id: sort order}``: the strategies' keys are the data's own."""

    order: Mapping[str, int]


@answer(*_same("reason"))
@attrs.frozen
class SwitchedOffData:
    """Why a flag was switched off in an environment without being asked (its last
    active strategy went)."""

    reason: str


@answer(*_same("variants"))
@attrs.frozen
class VariantNamesData:
    variants: tuple[str, ...]


@answer(*_same("dependencies"))
@attrs.frozen
class DependencyNamesData:
    dependencies: tuple[str, ...]


@answer(AnswerField("status", "status"), AnswerField("status_value", "statusValue"))
@attrs.frozen
class FlagCompletedData:
    status: str
    status_value: str | None


@answer(*_same("action", "environments", "strategies", "tags"))
@attrs.frozen
class FlagImportedData:
    """What an import did to a flag: how many strategies per environment, how many tags."""

    action: str
    environments: tuple[str, ...]
    strategies: Mapping[str, int]
    tags: int


@answer(_omitted("strategy_id", "strategyId"), AnswerField("segment_ids", "segmentIds"))
@attrs.frozen
class SegmentLinksData:
    """A strategy's segments (``data`` names the strategy, ``preData`` does not)."""

    strategy_id: str | None
    segment_ids: tuple[int, ...]


# --- segments, context fields, strategy definitions, feature types ---
@answer(*_same("id", "name", "description", "project", "constraints"))
@attrs.frozen
class SegmentData:
    """A segment in an event: its constraints counted, not listed."""

    id: int
    name: str
    description: str | None
    project: str | None
    constraints: int

    @classmethod
    def of(cls, segment: Segment) -> SegmentData:
        return cls(
            segment.id, segment.name, segment.description, segment.project, len(segment.constraints)
        )


@answer(
    *_same("name", "description"),
    AnswerField("legal_values", "legalValues"),
    AnswerField("stickiness", "stickiness"),
    AnswerField("sort_order", "sortOrder"),
)
@attrs.frozen
class ContextFieldData:
    name: str
    description: str | None
    legal_values: tuple[LegalValueAnswer, ...]
    stickiness: bool
    sort_order: int

    @classmethod
    def of(cls, field: ContextField) -> ContextFieldData:
        return cls(
            field.name,
            field.description,
            tuple(LegalValueAnswer(v.value, v.description) for v in field.legal_values),
            field.stickiness,
            field.sort_order,
        )


@answer(*_same("name", "title", "description", "parameters"))
@attrs.frozen
class StrategyDefinitionData:
    name: str
    title: str | None
    description: str | None
    parameters: tuple[StrategyParameter, ...]

    @classmethod
    def of(cls, definition: StrategyDefinition) -> StrategyDefinitionData:
        return cls(definition.name, definition.title, definition.description, definition.parameters)


@answer(AnswerField("id", "id"), AnswerField("lifetime_days", "lifetimeDays"))
@attrs.frozen
class FeatureTypeData:
    id: str
    lifetime_days: int | None


@answer(*_same("features", "count"))
@attrs.frozen
class StaleReminderData:
    """A project's potentially stale flags: the first names, and how many there are."""

    features: tuple[str, ...]
    count: int


# --- people ---
@answer(
    *_same("id", "name", "email", "username"),
    AnswerField("root_role", "rootRole"),
    AnswerField("disabled", "disabled"),
    _omitted("signed_in_with", "signedInWith"),
)
@attrs.frozen
class UserData:
    """A user or service account (never a password); a user a provider's sign-in made
    names the provider."""

    id: int
    name: str | None
    email: str | None
    username: str | None
    root_role: int
    disabled: bool
    signed_in_with: str | None = None

    @classmethod
    def of(cls, user: User, *, signed_in_with: str | None = None) -> UserData:
        return cls(
            user.id,
            user.name,
            user.email,
            user.username,
            user.root_role_id,
            user.disabled,
            signed_in_with,
        )


@answer(AnswerField("id", "id"), _omitted("link"))
@attrs.frozen
class PasswordChangedData:
    """Whose password changed, and through which kind of link when one was used."""

    id: int
    link: str | None = None


@answer(*_same("id", "kind"))
@attrs.frozen
class ResetLinkData:
    id: int
    kind: str


@answer(*_same("name", "environment"))
@attrs.frozen
class PermissionData:
    """A role's grant (``environment`` null: everywhere)."""

    name: str
    environment: str | None


@answer(*_same("id", "name", "type", "description", "permissions"))
@attrs.frozen
class RoleData:
    id: int
    name: str
    type: str
    description: str
    permissions: tuple[PermissionData, ...]

    @classmethod
    def of(cls, role: Role) -> RoleData:
        return cls(
            role.id,
            role.name,
            role.type.value,
            role.description,
            tuple(PermissionData(g.permission.value, g.environment) for g in role.grants),
        )


@answer(
    _omitted("user_id", "userId"), _omitted("group_id", "groupId"), AnswerField("roles", "roles")
)
@attrs.frozen
class ProjectAccessData:
    """A user's or a group's roles in a project, as they now are."""

    user_id: int | None
    group_id: int | None
    roles: tuple[int, ...]


@answer(
    *_same("id", "name", "description"),
    AnswerField("mappings_sso", "mappingsSSO"),
    AnswerField("root_role", "rootRole"),
    AnswerField("users", "users"),
)
@attrs.frozen
class GroupData:
    id: int
    name: str
    description: str | None
    mappings_sso: tuple[str, ...]
    root_role: int | None
    users: tuple[int, ...]

    @classmethod
    def of(cls, group: Group, user_ids: Iterable[int]) -> GroupData:
        return cls(
            group.id,
            group.name,
            group.description,
            group.mappings_sso,
            group.root_role,
            tuple(user_ids),
        )


@answer(AnswerField("group_id", "groupId"), AnswerField("user_id", "userId"))
@attrs.frozen
class GroupMemberData:
    group_id: int
    user_id: int


@answer(
    AnswerField("id", "id"),
    AnswerField("user_id", "userId"),
    AnswerField("description", "description"),
    AnswerField("expires_at", "expiresAt"),
)
@attrs.frozen
class PersonalTokenData:
    """A personal or service account token (never its secret); ``expires_at`` in
    Python's ISO format, as the log has always kept it."""

    id: int
    user_id: int
    description: str
    expires_at: str

    @classmethod
    def of(cls, token: PersonalToken) -> PersonalTokenData:
        return cls(token.id, token.user_id, token.description, token.expires_at.isoformat())


# --- tokens, signals, action sets, integrations, samples ---
@answer(AnswerField("token_name", "tokenName"), *_same("type", "projects", "environment"))
@attrs.frozen
class ApiTokenData:
    token_name: str
    type: str
    projects: tuple[str, ...]
    environment: str | None


@answer(AnswerField("token_name", "tokenName"))
@attrs.frozen
class TokenNameData:
    token_name: str


def token_name_of(data: Mapping[str, Any] | None) -> str:
    """The token an ``api-token-created`` event's data names."""
    (key,) = (row.key for row in ANSWER_FIELDS[ApiTokenData] if row.attribute == "token_name")
    return str((data or {}).get(key))


@answer(
    AnswerField("endpoint_id", "endpointId"), AnswerField("token_id", "tokenId"), _omitted("name")
)
@attrs.frozen
class SignalTokenData:
    """A signal endpoint's token (named when made)."""

    endpoint_id: int
    token_id: int
    name: str | None = None


@answer(*_same("id", "name"), AnswerField("source_id", "sourceId"))
@attrs.frozen
class ActionSetCreatedData:
    id: int
    name: str
    source_id: int


@answer(*_same("id", "provider", "enabled", "description", "events", "projects", "environments"))
@attrs.frozen
class IntegrationData:
    """What the event log keeps of an integration: no parameter, no secret (Unleash's
    ``omitKeys(addon, 'parameters')``)."""

    id: int
    provider: str
    enabled: bool
    description: str | None
    events: tuple[str, ...]
    projects: tuple[str, ...]
    environments: tuple[str, ...]

    @classmethod
    def of(cls, integration: Integration) -> IntegrationData:
        return cls(
            integration.id,
            integration.provider,
            integration.enabled,
            integration.description,
            integration.events,
            integration.projects,
            integration.environments,
        )


@answer(AnswerField("contexts", "contexts"), AnswerField("dropped_fields", "droppedFields"))
@attrs.frozen
class SampleUploadedData:
    """How many contexts an uploaded sample kept, and the fields it left out."""

    contexts: int
    dropped_fields: tuple[str, ...]


# --- change requests ---
@answer(AnswerField("enabled", "enabled"), AnswerField("required_approvals", "requiredApprovals"))
@attrs.frozen
class ChangeRequestSettingsData:
    enabled: bool
    required_approvals: int

    @classmethod
    def of(cls, settings: ChangeRequestSettings) -> ChangeRequestSettingsData:
        return cls(settings.enabled, settings.required_approvals)


@answer(AnswerField("change_request_id", "changeRequestId"), *_same("feature", "action"))
@attrs.frozen
class ChangeAddedData:
    change_request_id: int
    feature: str | None
    action: str


@answer(AnswerField("change_id", "changeId"))
@attrs.frozen
class ChangeIdNote:
    change_id: int


@answer(*_same("title"))
@attrs.frozen
class TitleNote:
    title: str


@answer(*_same("text"))
@attrs.frozen
class TextNote:
    text: str


@answer(*_same("comment"))
@attrs.frozen
class CommentNote:
    comment: str


@answer(
    AnswerField("scheduled_at", "scheduledAt"),
    _omitted("delay_seconds", "delaySeconds"),
    _omitted("reason"),
)
@attrs.frozen
class ScheduleNote:
    """When a request was scheduled for (Python's ISO format, as kept); once applied, how
    late; failing, why."""

    scheduled_at: str
    delay_seconds: float | None = None
    reason: str | None = None


ChangeRequestNote = ChangeIdNote | TitleNote | TextNote | CommentNote | ScheduleNote


@answer(AnswerField("change_request_id", "changeRequestId"), *_same("state", "data"))
@attrs.frozen
class ChangeRequestData:
    """A change request's move: its id, its state after it, and what was said."""

    change_request_id: int
    state: ChangeRequestState
    data: ChangeRequestNote | None = None


@answer(AnswerField("change_request_id", "changeRequestId"), *_same("state", "data"))
@attrs.frozen
class ChangeRequestReviewersData:
    """The reviewers a change request asks for, by user id."""

    change_request_id: int
    state: ChangeRequestState
    data: tuple[int, ...]


# --- release templates and plans ---
@answer(*_same("id", "name", "milestones"))
@attrs.frozen
class ReleaseTemplateData:
    """A template with its milestones' names."""

    id: str
    name: str
    milestones: tuple[str, ...]

    @classmethod
    def of(cls, template: ReleasePlanTemplate) -> ReleaseTemplateData:
        return cls(template.id, template.name, tuple(m.name for m in template.milestones))


@answer(
    AnswerField("id", "id"), AnswerField("template_id", "templateId"), *_same("name", "milestones")
)
@attrs.frozen
class ReleasePlanData:
    id: str
    template_id: str
    name: str
    milestones: tuple[str, ...]

    @classmethod
    def of(cls, plan: ReleasePlan) -> ReleasePlanData:
        return cls(plan.id, plan.template_id, plan.name, tuple(m.name for m in plan.milestones))


@answer(
    AnswerField("release_plan_id", "releasePlanId"),
    AnswerField("milestone_id", "milestoneId"),
    AnswerField("milestone_name", "milestoneName"),
    AnswerField("previous_milestone_id", "previousMilestoneId"),
    AnswerField("automatic", "automatic"),
    _omitted("delay_seconds", "delaySeconds"),
    _omitted("rollback"),
)
@attrs.frozen
class MilestoneStartedData:
    """A milestone started: by a person, or on its own (how late), or by a rollback."""

    release_plan_id: str
    milestone_id: str
    milestone_name: str
    previous_milestone_id: str | None
    automatic: bool
    delay_seconds: float | None = None
    rollback: bool | None = None


@answer(
    AnswerField("release_plan_id", "releasePlanId"),
    AnswerField("source_milestone", "sourceMilestone"),
    _omitted("target_milestone", "targetMilestone"),
    _omitted("transition_condition", "transitionCondition"),
)
@attrs.frozen
class ProgressionData:
    """A milestone's progression set (to the next, after a while) or deleted."""

    release_plan_id: str
    source_milestone: str
    target_milestone: str | None = None
    transition_condition: TransitionConditionAnswer | None = None


@answer(
    AnswerField("release_plan_id", "releasePlanId"), AnswerField("paused_reason", "pausedReason")
)
@attrs.frozen
class ProgressionsResumedData:
    release_plan_id: str
    paused_reason: str | None


@answer(AnswerField("release_plan_id", "releasePlanId"), AnswerField("safeguard_id", "safeguardId"))
@attrs.frozen
class SafeguardData:
    release_plan_id: str
    safeguard_id: str


@answer(
    AnswerField("release_plan_id", "releasePlanId"),
    AnswerField("milestone_id", "milestoneId"),
    *_same("reason", "action"),
)
@attrs.frozen
class ProgressionsPausedData:
    """A safeguard tripped (or a move could not be made): ``action`` pause or rollback."""

    release_plan_id: str
    milestone_id: str | None
    reason: str
    action: str


EventData = (
    NameData
    | IdData
    | IdNameData
    | NamedSwitchData
    | ProjectData
    | EnvironmentCreatedData
    | EnvironmentChangeData
    | EnvironmentDeletedData
    | EnvironmentRenamedData
    | FlagData
    | StrategyData
    | StrategyOrderData
    | SwitchedOffData
    | VariantNamesData
    | DependencyNamesData
    | FlagCompletedData
    | FlagImportedData
    | SegmentLinksData
    | Tag
    | TagType
    | SegmentData
    | ContextFieldData
    | StrategyDefinitionData
    | FeatureTypeData
    | StaleReminderData
    | UserData
    | PasswordChangedData
    | ResetLinkData
    | RoleData
    | ProjectAccessData
    | GroupData
    | GroupMemberData
    | PersonalTokenData
    | ApiTokenData
    | TokenNameData
    | SignalTokenData
    | ActionSetCreatedData
    | IntegrationData
    | SampleUploadedData
    | ChangeRequestSettingsData
    | ChangeAddedData
    | ChangeRequestData
    | ChangeRequestReviewersData
    | ReleaseTemplateData
    | ReleasePlanData
    | MilestoneStartedData
    | ProgressionData
    | ProgressionsResumedData
    | SafeguardData
    | ProgressionsPausedData
)
"""Every value an event may carry as its ``data`` or ``preData``."""
