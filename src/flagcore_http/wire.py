"""The HTTP layer's JSON: its request bodies and the converter that reads them.

The body classes are attrs classes with camelCase keys on the wire. They are taught to
this module's own `converter`, a copy of `flagcore.wire.converter` (which knows the model
classes): the core's converter is shared by every package and is never changed here.
`flagcore_http.bodies.read_body` and the routes that read JSON by hand use `structure`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs
import cattrs

from flagcore import wire
from flagcore.entities import (
    ActionKind,
    CodeReference,
    LegalValue,
    StrategyParameter,
    TokenType,
)
from flagcore.model import Constraint, Strategy, Variant
from flagcore.people import RootRole
from flagcore.permissions import Permission, RoleType

__all__ = [
    "BODY_NAMES",
    "ActionBody",
    "ActionSetBody",
    "AddonBody",
    "CloneEnvironment",
    "CodeScanBody",
    "CompleteFlagBody",
    "ContextFieldBody",
    "ContextFieldUpdate",
    "CreateEnvironment",
    "CreateFlag",
    "CreatePersonalToken",
    "CreateProject",
    "CreateServiceAccount",
    "CreateStrategyDefinition",
    "CreateTagType",
    "CreateToken",
    "CreateUser",
    "EndpointBody",
    "EndpointUpdate",
    "ExecutionParamsBody",
    "GroupBody",
    "GroupUserBody",
    "GroupUserId",
    "IdBody",
    "LifetimeBody",
    "LoginBody",
    "MatchBody",
    "MilestoneBody",
    "NameBody",
    "PasswordBody",
    "PayloadFilterBody",
    "PermissionBody",
    "PreviewBody",
    "ProgressionBody",
    "ProjectAccessBody",
    "ReleasePlanTemplateBody",
    "RoleBody",
    "SafeguardActionBody",
    "SafeguardBody",
    "SafeguardMetricBody",
    "SafeguardTriggerBody",
    "SegmentBody",
    "SignalTokenBody",
    "SortOrderItem",
    "StrategySegments",
    "TagBody",
    "TemplateIdBody",
    "TransitionConditionBody",
    "UpdateEnvironment",
    "UpdateFlag",
    "UpdateProject",
    "UpdateServiceAccount",
    "UpdateTagType",
    "UpdateUser",
    "UserRolesBody",
    "converter",
    "structure",
]

_T = TypeVar("_T")


@attrs.frozen
class TagBody:
    type: str
    value: str


@attrs.frozen
class CreateFlag:
    name: str
    description: str | None = None
    type: str = "release"
    impression_data: bool = False
    tags: tuple[TagBody, ...] = ()


@attrs.frozen
class UpdateFlag:
    """Unleash's ``updateFeatureSchema``, read as its ``PUT`` replaces: a field left out
    takes its default. ``archived`` may only be false here (archive with ``DELETE``)."""

    description: str | None = None
    type: str = "release"
    impression_data: bool = False
    stale: bool = False
    archived: bool = False


@attrs.frozen
class SortOrderItem:
    id: str
    sort_order: int


@attrs.frozen
class SegmentBody:
    name: str
    constraints: tuple[Constraint, ...]
    description: str | None = None
    project: str | None = None


@attrs.frozen
class StrategySegments:
    """Unleash's ``updateFeatureStrategySegmentsSchema``: all four are required, and the
    project and environment must be the strategy's own."""

    project_id: str
    strategy_id: str
    environment_id: str
    segment_ids: tuple[int, ...]


@attrs.frozen
class CreateProject:
    id: str
    name: str
    description: str | None = None


@attrs.frozen
class UpdateProject:
    name: str | None = None
    description: str | None = None


@attrs.frozen
class CreateToken:
    token_name: str
    type: str
    environment: str | None = None
    projects: tuple[str, ...] = ()
    project: str | None = None


@attrs.frozen
class CreateTagType:
    name: str
    description: str | None = None


@attrs.frozen
class AddonBody:
    """Unleash's ``addonCreateUpdateSchema``: an integration, made or replaced whole
    (secret parameters sent as ``*****`` keep their stored values)."""

    provider: str
    enabled: bool
    parameters: dict[str, str]  # strict: no number read as text, unlike strategies'
    events: tuple[str, ...]
    description: str | None = None
    projects: tuple[str, ...] = ()
    environments: tuple[str, ...] = ()


@attrs.frozen
class ContextFieldBody:
    """Unleash's ``createContextFieldSchema``. A ``project`` (project-scoped fields, an
    Enterprise feature) is read only to be refused: every field here is global."""

    name: str
    description: str | None = None
    legal_values: tuple[LegalValue, ...] | None = None
    stickiness: bool = False
    sort_order: int | None = None
    project: str | None = None


@attrs.frozen
class ContextFieldUpdate:
    """Unleash's ``updateContextFieldSchema``, read as its ``PUT`` replaces: a field left
    out takes its default, but the sort order stays when none is given. ``name`` may be
    sent (Unleash's UI sends the whole field) and must then be the path's."""

    name: str | None = None
    description: str | None = None
    legal_values: tuple[LegalValue, ...] | None = None
    stickiness: bool = False
    sort_order: int | None = None


@attrs.frozen
class NameBody:
    name: str


@attrs.frozen
class CreateEnvironment:
    name: str
    type: str = "development"
    sort_order: int | None = None


@attrs.frozen
class UpdateEnvironment:
    """Unleash's ``updateEnvironmentSchema``: the type (required, as Unleash's UI always
    sends it), and a sort order that stays when left out."""

    type: str
    sort_order: int | None = None


@attrs.frozen
class CloneEnvironment:
    """Unleash's ``cloneEnvironmentSchema``: the new environment's name and type, the
    projects whose flags are copied (none: every project), and whether custom roles'
    grants in the source are granted in the clone too."""

    name: str
    type: str
    projects: tuple[str, ...] = ()
    clone_permissions: bool = False


@attrs.frozen
class CreateStrategyDefinition:
    name: str
    description: str | None = None
    parameters: tuple[StrategyParameter, ...] = ()
    title: str | None = None


# Project action sets, Unleash's ``CreateActionsSchema`` (see `flagcore_http.routes.actions`).
@attrs.frozen
class PayloadFilterBody:
    operator: str
    values: tuple[str, ...] = ()
    value: str | None = None
    inverted: bool = False
    case_insensitive: bool = False


@attrs.frozen
class MatchBody:
    source: str
    source_id: int
    payload: dict[str, PayloadFilterBody] = attrs.field(factory=dict)


@attrs.frozen
class ExecutionParamsBody:
    feature_name: str
    environment: str | None = None
    project: str | None = None


@attrs.frozen
class ActionBody:
    action: ActionKind
    sort_order: int
    execution_params: ExecutionParamsBody


@attrs.frozen
class ActionSetBody:
    name: str
    match: MatchBody
    actions: tuple[ActionBody, ...]
    description: str | None = None
    enabled: bool = True
    actor_id: int | None = None


# Signal endpoints and their tokens (see `flagcore_http.routes.signals`).
@attrs.frozen
class EndpointBody:
    name: str
    description: str | None = None
    enabled: bool = True


@attrs.frozen
class EndpointUpdate:
    name: str | None = None
    description: str | None = None
    enabled: bool | None = None


@attrs.frozen
class SignalTokenBody:
    name: str


# Users and sign-in (see `flagcore_http.routes.users`), in Unleash's schemas' shape.
@attrs.frozen
class CreateUser:
    """Unleash's ``createUserSchema``: ``rootRole`` is an id (1, 2, 3, or a custom root
    role's) or a predefined role's name."""

    root_role: RootRole | int
    email: str | None = None
    username: str | None = None
    name: str | None = None
    password: str | None = None
    send_email: bool = False


@attrs.frozen
class UpdateUser:
    """Unleash's ``updateUserSchema`` (``disabled`` is flagcore's own)."""

    email: str | None = None
    name: str | None = None
    root_role: RootRole | int | None = None
    disabled: bool | None = None


# Roles and project access (see `flagcore_http.routes.roles`), in Unleash's shape.
@attrs.frozen
class PermissionBody:
    """One of a role's permissions: its name, and for a project role's environment
    permissions the environment it holds in (none: every environment)."""

    name: Permission
    environment: str | None = None


@attrs.frozen
class RoleBody:
    """Unleash's ``createRoleWithPermissionsSchema``: ``type`` is ``custom`` (a project
    role, Unleash's default) or ``root-custom``."""

    name: str
    description: str = ""
    type: RoleType = RoleType.CUSTOM
    permissions: tuple[PermissionBody, ...] = ()


@attrs.frozen
class ProjectAccessBody:
    """Unleash's ``projectAddAccessSchema``: each user and each group gets each role."""

    roles: tuple[int, ...]
    users: tuple[int, ...] = ()
    groups: tuple[int, ...] = ()


@attrs.frozen
class UserRolesBody:
    roles: tuple[int, ...]


@attrs.frozen
class GroupUserId:
    """Unleash's minimal user object: its ``id``."""

    id: int


@attrs.frozen
class GroupUserBody:
    """One member of a group as Unleash's ``createGroupSchema`` names it:
    ``{"user": {"id": 3}}``."""

    user: GroupUserId


@attrs.frozen
class GroupBody:
    """Unleash's ``createGroupSchema`` (also its update's): ``rootRole`` a root role's id
    or null; ``users`` the members, replaced whole by an update."""

    name: str
    description: str | None = None
    mappings_sso: tuple[str, ...] = ()
    root_role: int | None = None
    users: tuple[GroupUserBody, ...] = ()


@attrs.frozen
class PasswordBody:
    password: str
    old_password: str | None = None
    confirm_password: str | None = None


@attrs.frozen
class IdBody:
    """Unleash's ``idSchema``: for a reset link, the user's email (or username)."""

    id: str


@attrs.frozen
class CreatePersonalToken:
    """Unleash's ``createPatSchema``: both required; ``expiresAt`` an RFC 3339 date-time."""

    description: str
    expires_at: str


@attrs.frozen
class CreateServiceAccount:
    """The enterprise UI's ``IServiceAccountPayload``: all three required."""

    name: str
    username: str
    root_role: RootRole | int


@attrs.frozen
class UpdateServiceAccount:
    """What is left out is kept."""

    name: str | None = None
    username: str | None = None
    root_role: RootRole | int | None = None


@attrs.frozen
class LoginBody:
    """Unleash's ``loginSchema``: ``username`` is an email or a username."""

    username: str
    password: str


@attrs.frozen
class PreviewBody:
    """A proposed change to preview (issue 30): what it would set in the environment;
    a field left out stays as it is (at least one is needed)."""

    enabled: bool | None = None
    strategies: tuple[Strategy, ...] | None = None
    variants: tuple[Variant, ...] | None = None


@attrs.frozen
class UpdateTagType:
    """Unleash's ``updateTagTypeSchema``; flagcore keeps no ``icon``, so one is refused
    rather than dropped."""

    description: str | None = None
    icon: str | None = None


@attrs.frozen
class ChangeRequestConfigBody:
    """Unleash's ``PUT .../change-requests/config``: both fields required."""

    change_requests_enabled: bool
    required_approvals: int


@attrs.frozen
class ChangeBody:
    """One change (Unleash's ``IChangeSchema``): the payload is read by the service as
    its action's typed payload, with its paths."""

    action: str
    feature: str | None = None
    payload: Any = None


@attrs.frozen
class ChangeStateBody:
    state: str
    comment: str | None = None
    scheduled_at: str | None = None


@attrs.frozen
class ChangeTitleBody:
    title: str


@attrs.frozen
class ChangeCommentBody:
    text: str


@attrs.frozen
class ChangeReviewersBody:
    reviewers: tuple[int, ...]


@attrs.frozen
class CodeScanBody:
    """A scan's result (``flagcore scan --upload SOURCE``): it replaces what ``source``
    reported before. Every key is required: nothing is defaulted for the scanner."""

    source: str
    references: tuple[CodeReference, ...]


@attrs.frozen
class CompleteFlagBody:
    """Unleash's ``featureLifecycleCompletedSchema``: ``kept`` or ``discarded``, and the
    variant or state kept."""

    status: str
    status_value: str | None = None


@attrs.frozen
class TransitionConditionBody:
    """Unleash's ``transitionConditionSchema``: minutes before the next milestone starts."""

    interval_minutes: int


@attrs.frozen
class MilestoneBody:
    """Unleash's ``createReleasePlanMilestoneSchema`` (with ``transitionCondition``). An
    ``id`` the frontend sends for its draft is taken and not kept: the server gives each
    milestone its own."""

    name: str
    sort_order: int
    strategies: tuple[Strategy, ...] = ()
    transition_condition: TransitionConditionBody | None = None
    id: str | None = None


@attrs.frozen
class ReleasePlanTemplateBody:
    """Unleash's ``createReleasePlanTemplateSchema`` (and the update's)."""

    name: str
    milestones: tuple[MilestoneBody, ...]
    description: str | None = None


@attrs.frozen
class TemplateIdBody:
    """Unleash's ``releasePlanTemplateIdSchema``: the template applied to a flag."""

    template_id: str


@attrs.frozen
class ProgressionBody:
    """Unleash's ``changeMilestoneProgressionSchema``."""

    target_milestone: str
    transition_condition: TransitionConditionBody


@attrs.frozen
class SafeguardMetricBody:
    """Unleash's ``createSafeguardSchema.impactMetric``; ``windowMinutes`` (instead of
    ``timeRange``) and ``ratioOf`` are flagcore's. Label selectors other than none are
    refused: a plan's safeguard reads its own flag and environment."""

    metric_name: str
    aggregation_mode: str
    time_range: str | None = None
    window_minutes: int | None = None
    ratio_of: str | None = None
    label_selectors: dict[str, tuple[str, ...]] = attrs.field(factory=dict)
    source: str | None = None


@attrs.frozen
class SafeguardTriggerBody:
    """Unleash's ``safeguardTriggerConditionSchema``."""

    operator: str
    threshold: float


@attrs.frozen
class SafeguardActionBody:
    """flagcore's: ``pausePlan`` (Unleash's only action) or ``rollbackPlan``."""

    type: str


@attrs.frozen
class SafeguardBody:
    """Unleash's ``createSafeguardSchema``, with flagcore's optional ``action``."""

    impact_metric: SafeguardMetricBody
    trigger_condition: SafeguardTriggerBody
    action: SafeguardActionBody | None = None


@attrs.frozen
class LifetimeBody:
    """Unleash's ``updateFeatureTypeLifetimeSchema``: days, 0 for never (null, which
    Unleash also takes for never, is refused: the key is required and says it with 0)."""

    lifetime_days: int


# Each class and its attributes whose keys differ; inner classes before those holding them.
_NAMES: Mapping[type, Mapping[str, str]] = {
    TagBody: {},
    CreateFlag: {"impression_data": "impressionData"},
    UpdateFlag: {"impression_data": "impressionData"},
    SortOrderItem: {"sort_order": "sortOrder"},
    SegmentBody: {},
    StrategySegments: {
        "strategy_id": "strategyId",
        "segment_ids": "segmentIds",
        "project_id": "projectId",
        "environment_id": "environmentId",
    },
    CreateProject: {},
    UpdateProject: {},
    CreateToken: {"token_name": "tokenName"},
    CreateTagType: {},
    LegalValue: {},
    ContextFieldBody: {"legal_values": "legalValues", "sort_order": "sortOrder"},
    ContextFieldUpdate: {"legal_values": "legalValues", "sort_order": "sortOrder"},
    NameBody: {},
    CreateEnvironment: {"sort_order": "sortOrder"},
    StrategyParameter: {},
    CreateStrategyDefinition: {},
    PayloadFilterBody: {"case_insensitive": "caseInsensitive"},
    MatchBody: {"source_id": "sourceId"},
    ExecutionParamsBody: {"feature_name": "featureName"},
    ActionBody: {"sort_order": "sortOrder", "execution_params": "executionParams"},
    ActionSetBody: {"actor_id": "actorId"},
    EndpointBody: {},
    EndpointUpdate: {},
    SignalTokenBody: {},
    CreateUser: {"root_role": "rootRole", "send_email": "sendEmail"},
    UpdateUser: {"root_role": "rootRole"},
    PasswordBody: {"old_password": "oldPassword", "confirm_password": "confirmPassword"},
    IdBody: {},
    LoginBody: {},
    CreatePersonalToken: {"expires_at": "expiresAt"},
    CreateServiceAccount: {"root_role": "rootRole"},
    UpdateServiceAccount: {"root_role": "rootRole"},
    PermissionBody: {},
    RoleBody: {},
    ProjectAccessBody: {},
    UserRolesBody: {},
    GroupUserId: {},
    GroupUserBody: {},
    GroupBody: {"mappings_sso": "mappingsSSO", "root_role": "rootRole"},
    PreviewBody: {},
    AddonBody: {},
    UpdateEnvironment: {"sort_order": "sortOrder"},
    CloneEnvironment: {"clone_permissions": "clonePermissions"},
    UpdateTagType: {},
    ChangeRequestConfigBody: {
        "change_requests_enabled": "changeRequestsEnabled",
        "required_approvals": "requiredApprovals",
    },
    ChangeBody: {},
    ChangeStateBody: {"scheduled_at": "scheduledAt"},
    ChangeTitleBody: {},
    ChangeCommentBody: {},
    ChangeReviewersBody: {},
    CodeReference: {},
    CodeScanBody: {},
    CompleteFlagBody: {"status_value": "statusValue"},
    LifetimeBody: {"lifetime_days": "lifetimeDays"},
    TransitionConditionBody: {"interval_minutes": "intervalMinutes"},
    MilestoneBody: {"sort_order": "sortOrder", "transition_condition": "transitionCondition"},
    ReleasePlanTemplateBody: {},
    TemplateIdBody: {"template_id": "templateId"},
    ProgressionBody: {
        "target_milestone": "targetMilestone",
        "transition_condition": "transitionCondition",
    },
    SafeguardMetricBody: {
        "metric_name": "metricName",
        "aggregation_mode": "aggregationMode",
        "time_range": "timeRange",
        "window_minutes": "windowMinutes",
        "ratio_of": "ratioOf",
        "label_selectors": "labelSelectors",
    },
    SafeguardTriggerBody: {},
    SafeguardActionBody: {},
    SafeguardBody: {"impact_metric": "impactMetric", "trigger_condition": "triggerCondition"},
}
# Public for the API contract's schemas (`flagcore_http.openapi`): the same names.
BODY_NAMES: Mapping[type, Mapping[str, str]] = _NAMES
# The model's names too, for error paths inside bodies that hold model values.
_ALL_NAMES: Mapping[type, Mapping[str, str]] = {**wire.WIRE_NAMES, **_NAMES}


_MAX_ROLE_ID = 2**53 - 1


def _root_role(value: object, _type: object) -> RootRole | int:
    """Unleash takes a root role by its id or its name: a predefined one (1-3, Admin,
    Editor, Viewer) or a custom root role's id, which the service checks."""
    if type(value) is int and (by_id := RootRole.of_id(value)) is not None:
        return by_id
    if type(value) is int and 0 < value <= _MAX_ROLE_ID:
        return value
    if type(value) is str and value in RootRole.__members__.values():
        return RootRole(value)
    raise ValueError("expected a root role: an id, or Admin, Editor or Viewer")


def _optional_root_role(value: object, _type: object) -> RootRole | int | None:
    return None if value is None else _root_role(value, _type)


def _strings_object(made: cattrs.Converter) -> Callable[[object, object], dict[str, str]]:
    """An object of strings (an integration's parameters): null or another type is a
    400 at the object, a value that is not a string one at its key."""
    plain = made.gen_structure_mapping(dict[str, str])

    def structure(value: object, _type: object) -> dict[str, str]:
        if not isinstance(value, dict):
            raise wire.WrongType("an object", value)
        read: dict[str, str] = plain(value, dict[str, str])
        return read

    return structure


def _number(value: object, _type: object) -> float:
    """A JSON number (a threshold): a string or a boolean is refused, not read as one."""
    if type(value) in (int, float):
        return float(value)  # type: ignore[arg-type]
    raise wire.WrongType("a number", value)


def _http_converter() -> cattrs.Converter:
    made = wire.converter.copy()
    made.register_structure_hook(float, _number)
    for enum_type in (ActionKind, TokenType, Permission, RoleType):
        made.register_structure_hook(enum_type, wire.enum_hook(enum_type))
        made.register_unstructure_hook(enum_type, lambda value: value.value)
    made.register_structure_hook(RootRole | int, _root_role)
    made.register_structure_hook(RootRole | int | None, _optional_root_role)
    made.register_structure_hook_func(lambda t: t == dict[str, str], _strings_object(made))
    for cls, renames in _NAMES.items():
        wire.register_class(made, cls, renames)
    return made


converter = _http_converter()


def structure(data: Any, cls: type[_T], what: str = "the body") -> _T:
    """Read ``data`` as ``cls`` (a body class or a model value); raises `InvalidInput`
    whose details name the JSON paths the client sent."""
    return wire.structure_with(converter, _ALL_NAMES, data, cls, what)
