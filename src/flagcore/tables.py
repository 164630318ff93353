"""One description per kind of stored entity: what a generic store needs to keep it.

A `Table` names the entity class, the attributes that make its key, the order its lists
come in, the attributes no two rows may share, and which rows go when another goes. A
store that keeps entities generically (`flagcore.ports.Records`) reads these and needs
nothing per entity; the port's named methods (`get_flag`, `list_tokens`, ...) are written
once over it in `flagcore.repositories`. Attributes are named by path (``segment.id``:
the ``id`` of the ``segment`` attribute), so an entity that wraps another keeps its shape.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import attrs

from flagcore.change_requests import ChangeRequest, ChangeRequestSettings
from flagcore.entities import (
    ActionExecution,
    ActionSet,
    ApiToken,
    CodeScan,
    ContextField,
    Environment,
    Event,
    FeatureTypeLifetime,
    FlagDefinition,
    FlagEnvironment,
    FlagStage,
    Integration,
    IntegrationCursor,
    IntegrationDelivery,
    Project,
    SampledContext,
    SegmentDefinition,
    Signal,
    SignalEndpoint,
    SignalEndpointToken,
    StrategyDefinition,
    StrategyPlacement,
    TagType,
    UpkeepDue,
)
from flagcore.people import (
    Group,
    GroupMember,
    PersonalToken,
    ResetLink,
    User,
    UserIdentity,
    UserPassword,
    UserSession,
)
from flagcore.permissions import GroupRoleAssignment, Role, RoleAssignment
from flagcore.release_plans import ImpactPoint, ImpactSeries, ReleasePlan, ReleasePlanTemplate

__all__ = [
    "ACTION_EXECUTIONS",
    "ACTION_SETS",
    "API_TOKENS",
    "CHANGE_REQUESTS",
    "CHANGE_REQUEST_SETTINGS",
    "CODE_SCANS",
    "CONTEXT_FIELDS",
    "CONTEXT_SAMPLES",
    "ENDPOINT_TOKENS",
    "ENVIRONMENTS",
    "EVENTS",
    "FEATURE_TYPE_LIFETIMES",
    "FLAGS",
    "FLAG_ENVIRONMENTS",
    "FLAG_STAGES",
    "FLAG_TAGS",
    "GROUPS",
    "GROUP_MEMBERS",
    "GROUP_ROLE_ASSIGNMENTS",
    "IMPACT_POINTS",
    "IMPACT_SERIES",
    "INTEGRATIONS",
    "INTEGRATION_CURSORS",
    "INTEGRATION_DELIVERIES",
    "IS_NULL",
    "NOT_NULL",
    "PERSONAL_TOKENS",
    "PROJECTS",
    "RELEASE_PLANS",
    "RELEASE_PLAN_TEMPLATES",
    "ROLES",
    "ROLE_ASSIGNMENTS",
    "SEGMENTS",
    "SIGNALS",
    "SIGNAL_ENDPOINTS",
    "STRATEGIES",
    "STRATEGY_DEFINITIONS",
    "TABLES",
    "TAG_TYPES",
    "UPKEEP_DUE",
    "USERS",
    "USER_IDENTITIES",
    "USER_PASSWORDS",
    "USER_RESET_LINKS",
    "USER_SESSIONS",
    "Below",
    "FlagTag",
    "Table",
]

_E = TypeVar("_E")


@attrs.frozen
class Below:
    """A condition: the attribute is less than ``value`` (pages of newest-first lists)."""

    value: Any


class _Null:
    def __init__(self, present: bool) -> None:
        self.present = present

    def __repr__(self) -> str:
        return "NOT_NULL" if self.present else "IS_NULL"


IS_NULL = _Null(present=False)
"""A condition: the attribute is None."""
NOT_NULL = _Null(present=True)
"""A condition: the attribute is set."""


@attrs.frozen
class Table(Generic[_E]):
    """One kind of entity as a store keeps it.

    ``key``: the attribute paths that identify a row (`Records.create_record` allocates
    it when it is one integer). ``order``: the paths lists are sorted by (``-`` before a
    path: descending). ``unique``: groups of paths no two rows share (a second row is a
    `flagcore.errors.Conflict`). ``deleted_with``: ``(table name, path)`` pairs: deleting
    that table's row whose key equals this row's ``path`` deletes this row too.
    """

    entity: type[_E]
    name: str
    key: tuple[str, ...]
    order: tuple[str, ...]
    unique: tuple[tuple[str, ...], ...] = ()
    deleted_with: tuple[tuple[str, str], ...] = ()

    def key_of(self, entity: _E) -> Any:
        """The key of ``entity``: one value, or a tuple when the key has several paths."""
        return _key_reader(self.key)(entity)

    def with_key(self, entity: _E, value: int) -> _E:
        """``entity`` under the integer key ``value`` (a table keyed by one path)."""
        (path,) = self.key
        evolved: _E = _evolved(entity, path.split("."), value)
        return evolved


@functools.cache
def _key_reader(paths: tuple[str, ...]) -> Callable[[Any], Any]:
    """One path: its value; several: the tuple of theirs (`operator.attrgetter`'s way)."""
    return operator.attrgetter(*paths)


def _evolved(entity: Any, names: list[str], value: Any) -> Any:
    first, *rest = names
    inner = _evolved(getattr(entity, first), rest, value) if rest else value
    return attrs.evolve(entity, **{first: inner})


@attrs.frozen(order=True)
class FlagTag:
    """A tag on a flag, as it is kept (the port speaks of ``(flag, Tag)`` pairs)."""

    flag: str
    tag_type: str
    value: str


PROJECTS = Table(Project, "projects", key=("id",), order=("id",))
ENVIRONMENTS = Table(Environment, "environments", key=("name",), order=("sort_order", "name"))
FLAGS = Table(FlagDefinition, "flags", key=("name",), order=("created_at", "name"))
FLAG_ENVIRONMENTS = Table(
    FlagEnvironment,
    "flag_environments",
    key=("flag", "environment"),
    order=("flag", "environment"),
    deleted_with=(("flags", "flag"),),
)
STRATEGIES = Table(
    StrategyPlacement,
    "strategies",
    key=("id",),
    order=("flag", "environment", "strategy.sort_order", "id"),
    deleted_with=(("flags", "flag"),),
)
SEGMENTS = Table(SegmentDefinition, "segments", key=("segment.id",), order=("segment.id",))
STRATEGY_DEFINITIONS = Table(
    StrategyDefinition, "strategy_definitions", key=("name",), order=("name",)
)
# Kept whole as a document (its key the only column): the service sorts by sort order.
CONTEXT_FIELDS = Table(ContextField, "context_fields", key=("name",), order=("name",))
TAG_TYPES = Table(TagType, "tag_types", key=("name",), order=("name",))
FLAG_TAGS = Table(
    FlagTag,
    "flag_tags",
    key=("flag", "tag_type", "value"),
    order=("flag", "tag_type", "value"),
    deleted_with=(("flags", "flag"), ("tag_types", "tag_type")),
)
API_TOKENS = Table(ApiToken, "api_tokens", key=("secret_hash",), order=("created_at", "name"))
SIGNAL_ENDPOINTS = Table(
    SignalEndpoint, "signal_endpoints", key=("id",), order=("id",), unique=(("name",),)
)
ENDPOINT_TOKENS = Table(
    SignalEndpointToken,
    "signal_endpoint_tokens",
    key=("id",),
    order=("id",),
    deleted_with=(("signal_endpoints", "endpoint_id"),),
)
SIGNALS = Table(
    Signal,
    "signals",
    key=("id",),
    order=("-id",),
    deleted_with=(("signal_endpoints", "endpoint_id"),),
)
ACTION_SETS = Table(
    ActionSet,
    "action_sets",
    key=("id",),
    order=("id",),
    deleted_with=(("signal_endpoints", "source"),),
)
ACTION_EXECUTIONS = Table(
    ActionExecution,
    "action_set_events",
    key=("id",),
    order=("-id",),
    unique=(("action_set.id", "signal.id"),),
    deleted_with=(("action_sets", "action_set.id"),),
)
EVENTS = Table(Event, "events", key=("id",), order=("-id",))
# People (issue 28). Emails and usernames are unique regardless of case: the service
# checks it, and the SQL schema holds an index on their lower case.
USERS = Table(User, "users", key=("id",), order=("id",))
USER_PASSWORDS = Table(
    UserPassword,
    "user_passwords",
    key=("user_id",),
    order=("user_id",),
    deleted_with=(("users", "user_id"),),
)
USER_SESSIONS = Table(
    UserSession,
    "user_sessions",
    key=("id_digest",),
    order=("created_at", "id_digest"),
    deleted_with=(("users", "user_id"),),
)
USER_RESET_LINKS = Table(
    ResetLink,
    "user_reset_links",
    key=("token_digest",),
    order=("created_at", "token_digest"),
    deleted_with=(("users", "user_id"),),
)
PERSONAL_TOKENS = Table(
    PersonalToken,
    "personal_tokens",
    key=("id",),
    order=("id",),
    unique=(("secret_digest",),),
    deleted_with=(("users", "user_id"),),
)

USER_IDENTITIES = Table(
    UserIdentity,
    "user_identities",
    key=("issuer", "subject"),
    order=("created_at", "issuer", "subject"),
    deleted_with=(("users", "user_id"),),
)

# Custom roles only: the predefined ones (`flagcore.permissions.PREDEFINED_ROLES`) are
# code, ids 1 to 5, never stored; a custom role's id is the service's (6 and up).
ROLES = Table(Role, "roles", key=("id",), order=("id",), unique=(("name",),))
ROLE_ASSIGNMENTS = Table(
    RoleAssignment,
    "role_assignments",
    key=("project", "user_id", "role_id"),
    order=("project", "user_id", "role_id"),
    deleted_with=(("projects", "project"), ("users", "user_id")),
)
# Groups (issue 28, Unleash's user groups): names unique; members and project roles go
# with their group, a member with their user, a project role with its project.
GROUPS = Table(Group, "user_groups", key=("id",), order=("id",), unique=(("name",),))
GROUP_MEMBERS = Table(
    GroupMember,
    "group_members",
    key=("group_id", "user_id"),
    order=("group_id", "user_id"),
    deleted_with=(("user_groups", "group_id"), ("users", "user_id")),
)
GROUP_ROLE_ASSIGNMENTS = Table(
    GroupRoleAssignment,
    "group_role_assignments",
    key=("project", "group_id", "role_id"),
    order=("project", "group_id", "role_id"),
    deleted_with=(("projects", "project"), ("user_groups", "group_id")),
)
# A scan's references kept whole as a document (issue 32): replaced whole, never queried
# by column; a reference may name a flag that does not exist (that is what it reports).
CODE_SCANS = Table(CodeScan, "code_scans", key=("source",), order=("source",))
# Lifecycle stages (issue 32): pre-live and live as SDK metrics first showed them,
# completed as marked; initial and archived are the flag's own times.
FLAG_STAGES = Table(
    FlagStage,
    "flag_stages",
    key=("flag", "stage"),
    order=("flag", "entered_at", "stage"),
    deleted_with=(("flags", "flag"),),
)
FEATURE_TYPE_LIFETIMES = Table(
    FeatureTypeLifetime, "feature_type_lifetimes", key=("id",), order=("id",)
)
# When each recurring upkeep job is next due (issue 32: the daily stale reminder).
UPKEEP_DUE = Table(UpkeepDue, "upkeep_due", key=("name",), order=("name",))

# The preview's context samples (issue 30): per environment, traffic and uploads apart.
CONTEXT_SAMPLES = Table(
    SampledContext,
    "context_samples",
    key=("environment", "source", "slot"),
    order=("environment", "source", "slot"),
)

# Integrations out (issue 31): the cursor and the delivery log go with their integration.
INTEGRATIONS = Table(Integration, "integrations", key=("id",), order=("id",))
INTEGRATION_CURSORS = Table(
    IntegrationCursor,
    "integration_cursors",
    key=("integration_id",),
    order=("integration_id",),
    deleted_with=(("integrations", "integration_id"),),
)
INTEGRATION_DELIVERIES = Table(
    IntegrationDelivery,
    "integration_deliveries",
    key=("id",),
    order=("-id",),
    deleted_with=(("integrations", "integration_id"),),
)

# Change requests (issue 30): the settings per project and environment, and the requests
# with their changes, reviews and comments kept inside them (read whole, never alone).
CHANGE_REQUEST_SETTINGS = Table(
    ChangeRequestSettings,
    "change_request_settings",
    key=("project", "environment"),
    order=("project", "environment"),
    deleted_with=(("projects", "project"),),
)
CHANGE_REQUESTS = Table(
    ChangeRequest,
    "change_requests",
    key=("id",),
    order=("id",),
    deleted_with=(("projects", "project"),),
)

# Release plans (issue 32): templates kept whole as documents; a plan keeps its
# milestones and safeguards inside its row, goes with its flag, and is found by the
# worker through ``next_move_at``.
RELEASE_PLAN_TEMPLATES = Table(
    ReleasePlanTemplate, "release_plan_templates", key=("id",), order=("id",)
)
RELEASE_PLANS = Table(
    ReleasePlan,
    "release_plans",
    key=("id",),
    order=("id",),
    deleted_with=(("flags", "flag"),),
)
# Impact metrics (issue 32): the series each environment reports (bounded), and one row
# per series and minute, kept a day.
IMPACT_SERIES = Table(
    ImpactSeries,
    "impact_series",
    key=("environment", "flag", "name"),
    order=("environment", "flag", "name"),
    deleted_with=(("flags", "flag"),),
)
IMPACT_POINTS = Table(
    ImpactPoint,
    "impact_points",
    key=("environment", "flag", "name", "minute"),
    # Newest first: a safeguard reads the last few minutes of a series with a limit.
    order=("environment", "flag", "name", "-minute"),
    deleted_with=(("flags", "flag"),),
)

TABLES: tuple[Table[Any], ...] = (
    PROJECTS,
    ENVIRONMENTS,
    FLAGS,
    FLAG_ENVIRONMENTS,
    SEGMENTS,
    STRATEGIES,
    STRATEGY_DEFINITIONS,
    TAG_TYPES,
    FLAG_TAGS,
    CONTEXT_FIELDS,
    API_TOKENS,
    SIGNAL_ENDPOINTS,
    ENDPOINT_TOKENS,
    SIGNALS,
    ACTION_SETS,
    ACTION_EXECUTIONS,
    EVENTS,
    USERS,
    USER_PASSWORDS,
    USER_SESSIONS,
    USER_RESET_LINKS,
    PERSONAL_TOKENS,
    USER_IDENTITIES,
    ROLES,
    ROLE_ASSIGNMENTS,
    GROUPS,
    GROUP_MEMBERS,
    GROUP_ROLE_ASSIGNMENTS,
    INTEGRATIONS,
    INTEGRATION_CURSORS,
    INTEGRATION_DELIVERIES,
    CONTEXT_SAMPLES,
    CHANGE_REQUEST_SETTINGS,
    CHANGE_REQUESTS,
    CODE_SCANS,
    FLAG_STAGES,
    FEATURE_TYPE_LIFETIMES,
    UPKEEP_DUE,
    RELEASE_PLAN_TEMPLATES,
    RELEASE_PLANS,
    IMPACT_SERIES,
    IMPACT_POINTS,
)
"""Every table a generic store keeps, each after the tables it refers to (metric buckets
and SDK instances have their own methods: counts that add up and merges are logic, not
keeping)."""
