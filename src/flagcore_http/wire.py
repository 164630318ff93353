"""The HTTP layer's JSON: its request bodies and the converter that reads them.

The body classes are attrs classes with camelCase keys on the wire. They are taught to
this module's own `converter`, a copy of `flagcore.wire.converter` (which knows the model
classes): the core's converter is shared by every package and is never changed here.
`flagcore_http.bodies.read_body` and the routes that read JSON by hand use `structure`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar

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
from flagcore.wire import PLAYGROUND_CONTEXT_NAMES, FeatureExport, PlaygroundContext

__all__ = [
    "BODY_NAMES",
    "CLOSED_BODIES",
    "ActionBody",
    "ActionSetBody",
    "AddonBody",
    "AdvancedPlaygroundBody",
    "CloneEnvironment",
    "CodeScanBody",
    "CompleteFlagBody",
    "ContextBody",
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
    "ExplainBody",
    "ExportBody",
    "FlagPatch",
    "FlagPatchPath",
    "GroupBody",
    "GroupUserBody",
    "GroupUserId",
    "IdBody",
    "ImpactMetricsBody",
    "ImportBody",
    "ImportTarget",
    "LifetimeBody",
    "LoginBody",
    "MatchBody",
    "MilestoneBody",
    "NameBody",
    "PasswordBody",
    "PatchOperation",
    "PayloadFilterBody",
    "PermissionBody",
    "PlaygroundBody",
    "PreviewBody",
    "ProgressionBody",
    "ProjectAccessBody",
    "Projects",
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
    "every_project",
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
class ImpactMetricsBody:
    """flagcore's operator post of a flag's impact metrics, in the shape SDKs send them:
    each metric is read by `flagcore.wire.read_impact_metrics`, the rules of SDK reports."""

    impact_metrics: tuple[dict[str, Any], ...]


@attrs.frozen
class LifetimeBody:
    """Unleash's ``updateFeatureTypeLifetimeSchema``: days, 0 for never (null, which
    Unleash also takes for never, is refused: the key is required and says it with 0)."""

    lifetime_days: int


# The playground (`flagcore_http.routes.playground`): closed, as Unleash's schemas are (a
# key they do not name is refused); the context is `flagcore.wire.PlaygroundContext`,
# whose rules are the service's (`flagcore.service.playground.check_request`).
Projects = tuple[str, ...] | Literal["*"] | None
"""The projects a playground request names: ``"*"`` (or missing, or a list holding it):
every project."""


@attrs.frozen
class PlaygroundBody:
    """Unleash's ``playgroundRequestSchema``: one environment, the projects, the context."""

    environment: str
    context: PlaygroundContext
    projects: Projects = None


@attrs.frozen
class AdvancedPlaygroundBody:
    """Unleash's ``advancedPlaygroundRequestSchema``: several environments."""

    environments: tuple[str, ...]
    context: PlaygroundContext
    projects: Projects = None


@attrs.frozen
class ExplainBody:
    """flagcore's own: one flag explained in one environment (``appName`` not needed)."""

    flag: str
    environment: str
    context: PlaygroundContext = attrs.field(factory=PlaygroundContext)


def every_project(projects: Projects) -> tuple[str, ...] | None:
    """The project ids ``projects`` names, or None for every project."""
    if projects is None or projects == "*" or "*" in projects:
        return None
    return projects


# Unleash's export and import (`flagcore_http.routes.features_batch`): open, as Unleash's.
@attrs.frozen
class ExportBody:
    """Unleash's ``exportQuerySchema``: the environment, and which flags (by name, by
    project, by tag: ``{"type", "value"}`` or ``"type:value"``)."""

    environment: str
    features: tuple[str, ...] | None = None
    project: str | None = None
    download_file: bool = False
    tag: TagBody | str | None = None


@attrs.frozen
class ImportTarget:
    """Unleash's ``importTogglesValidateSchema``: where to, and the export
    (`flagcore.wire.FeatureExport`, read as ``flagcore.wire.read_export`` reads it)."""

    project: str
    environment: str
    data: FeatureExport


@attrs.frozen
class ImportBody:
    """Unleash's ``importTogglesSchema``, with flagcore's ``overwrite`` (replace flags that
    exist with another definition) and ``dryRun``."""

    project: str
    environment: str
    data: FeatureExport
    overwrite: bool = False
    dry_run: bool = False


# A flag's JSON Patch (RFC 6902): ``replace`` and ``add`` of four of its fields.
class PatchOperation(enum.Enum):
    REPLACE = "replace"
    ADD = "add"


class FlagPatchPath(enum.Enum):
    """What a flag's patch may change (the flag's JSON keys, as pointers)."""

    DESCRIPTION = "/description"
    TYPE = "/type"
    IMPRESSION_DATA = "/impressionData"
    STALE = "/stale"


@attrs.frozen
class FlagPatch:
    """One operation; the value's type is its path's (`flagcore_http.routes.features`)."""

    op: PatchOperation
    path: FlagPatchPath
    value: str | bool


# The Frontend API's and OFREP's POST (`flagcore_http.routes.frontend`, `.ofrep`).
@attrs.frozen
class ContextBody:
    """``{"context": {...}}``: Unleash's fields and ``properties`` (the Frontend API), or
    OpenFeature's flat attributes (OFREP). Each value is read where its rules are
    (`flagcore.service.frontend_context`), which names its path."""

    context: dict[str, Any] = attrs.field(factory=dict)


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
    ImpactMetricsBody: {"impact_metrics": "impactMetrics"},
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
    **PLAYGROUND_CONTEXT_NAMES,
    PlaygroundBody: {},
    AdvancedPlaygroundBody: {},
    ExplainBody: {},
    ExportBody: {"download_file": "downloadFile"},
    ImportTarget: {},
    ImportBody: {"dry_run": "dryRun"},
    FlagPatch: {},
    ContextBody: {},
}
# Classes whose reader refuses a key they do not name (the rest ignore it, as Unleash's
# readers do), and what the refusal adds: where such a value goes instead.
_CLOSED: Mapping[type, str] = {
    PlaygroundContext: "custom fields go in properties",
    PlaygroundBody: "",
    AdvancedPlaygroundBody: "",
    ExplainBody: "",
    ImpactMetricsBody: "",
}
# Public for the API contract's schemas (`flagcore_http.openapi`): the same names and
# the same closed classes.
BODY_NAMES: Mapping[type, Mapping[str, str]] = _NAMES
CLOSED_BODIES: frozenset[type] = frozenset(_CLOSED)
# The model's and the export's names too, for error paths inside bodies that hold them.
_ALL_NAMES: Mapping[type, Mapping[str, str]] = {**wire.EXPORT_NAMES, **_NAMES}


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


def _projects(made: cattrs.Converter) -> Callable[[object, object], Projects]:
    """``"*"``, a list of project ids, or null (a string other than ``"*"`` is refused)."""
    ids = made.get_structure_hook(tuple[str, ...])

    def structure(value: object, _type: object) -> Projects:
        if value is None or value == "*":
            return "*" if value == "*" else None
        if type(value) is str:
            raise ValueError(f'expected "*" or a list of project ids, got {value[:80]!r}')
        if type(value) is not list:
            raise wire.WrongType('"*" or a list of project ids', value)
        read: tuple[str, ...] = ids(value, tuple[str, ...])
        return read

    return structure


def _export_tag(made: cattrs.Converter) -> Callable[[object, object], TagBody | str | None]:
    """A tag as Unleash's export takes it: ``{"type", "value"}`` or ``"type:value"``."""

    def structure(value: object, _type: object) -> TagBody | str | None:
        if value is None or (type(value) is str and ":" in value):
            return value
        if type(value) is str:
            raise ValueError(f'expected {{"type", "value"}} or "type:value", got {value[:80]!r}')
        if type(value) is not dict:
            raise wire.WrongType('{"type", "value"} or "type:value"', value)
        read: TagBody = made.get_structure_hook(TagBody)(value, TagBody)
        return read

    return structure


def _text_or_boolean(value: object, _type: object) -> str | bool:
    if type(value) is str or type(value) is bool:
        return value
    raise wire.WrongType("a string or a boolean", value)


def _object(value: object, _type: object) -> dict[str, Any]:
    """Any JSON object, kept as it is (its values are read where their rules are)."""
    if type(value) is not dict:
        raise wire.WrongType("an object", value)
    return value


def _number(value: object, _type: object) -> float:
    """A JSON number (a threshold): a string or a boolean is refused, not read as one."""
    if type(value) in (int, float):
        return float(value)  # type: ignore[arg-type]
    raise wire.WrongType("a number", value)


def _http_converter() -> cattrs.Converter:
    made = wire.converter.copy()
    made.register_structure_hook(float, _number)
    for enum_type in (ActionKind, TokenType, Permission, RoleType, PatchOperation, FlagPatchPath):
        made.register_structure_hook(enum_type, wire.enum_hook(enum_type))
        made.register_unstructure_hook(enum_type, lambda value: value.value)
    made.register_structure_hook(RootRole | int, _root_role)
    made.register_structure_hook(RootRole | int | None, _optional_root_role)
    made.register_structure_hook_func(lambda t: t == dict[str, str], _strings_object(made))
    made.register_structure_hook_func(lambda t: t == dict[str, Any], _object)
    made.register_structure_hook(str | bool, _text_or_boolean)
    made.register_structure_hook(Projects, _projects(made))
    made.register_structure_hook(TagBody | str | None, _export_tag(made))
    made.register_structure_hook(FeatureExport, wire.structure_export)
    for cls, renames in _NAMES.items():
        wire.register_class(made, cls, renames, closed=_CLOSED.get(cls))
    return made


converter = _http_converter()


def structure(data: Any, cls: type[_T], what: str = "the body") -> _T:
    """Read ``data`` as ``cls`` (a body class or a model value); raises `InvalidInput`
    whose details name the JSON paths the client sent."""
    return wire.structure_with(converter, _ALL_NAMES, data, cls, what)
