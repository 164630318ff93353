"""What the admin side keeps: projects, environments, flags, tags, tokens, signals, events.

`flagcore.model` holds the rules as an SDK sees them; these values hold everything
around them. All are frozen; times are timezone-aware UTC datetimes.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Mapping
from typing import Any

import attrs

from flagcore.model import Constraint, Dependency, Segment, Strategy, Variant

__all__ = [
    "Action",
    "ActionExecution",
    "ActionKind",
    "ActionOutcome",
    "ActionSet",
    "ActionState",
    "ApiToken",
    "ClientInstance",
    "CodeReference",
    "CodeScan",
    "ContextField",
    "Environment",
    "EnvironmentState",
    "EnvironmentUsage",
    "Event",
    "FeatureTypeLifetime",
    "FlagDefinition",
    "FlagDetails",
    "FlagEnvironment",
    "FlagMetrics",
    "FlagStage",
    "Integration",
    "IntegrationCursor",
    "IntegrationDelivery",
    "LegalValue",
    "Project",
    "SampledContext",
    "SegmentDefinition",
    "SegmentDetails",
    "Signal",
    "SignalEndpoint",
    "SignalEndpointToken",
    "SourcedReference",
    "StrategyDefinition",
    "StrategyParameter",
    "StrategyPlacement",
    "Tag",
    "TagType",
    "TokenType",
    "UpkeepDue",
]


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@attrs.frozen
class Project:
    id: str
    name: str
    description: str | None = None
    created_at: dt.datetime = attrs.field(factory=_utc_now)


@attrs.frozen
class Environment:
    name: str
    type: str = "development"
    sort_order: int = 0
    enabled: bool = True


@attrs.frozen
class EnvironmentUsage:
    """What lives in an environment, shown before it is deleted: the flags switched on
    there, the strategies placed there, and what would refuse its deletion (one phrase
    each: an API token, an action set, a role)."""

    environment: Environment
    flags_on: int = 0
    strategies: int = 0
    users: tuple[str, ...] = ()


@attrs.frozen
class StrategyParameter:
    name: str
    type: str = "string"
    description: str = ""
    required: bool = False


@attrs.frozen
class StrategyDefinition:
    """A strategy admins may use; built-ins are always defined, custom ones are added."""

    name: str
    description: str | None = None
    parameters: tuple[StrategyParameter, ...] = ()
    editable: bool = True
    deprecated: bool = False
    title: str | None = None


@attrs.frozen
class TagType:
    name: str
    description: str | None = None


@attrs.frozen
class LegalValue:
    """One of the values a context field allows, with what it means to people."""

    value: str
    description: str | None = None


@attrs.frozen
class ContextField:
    """A context field as admins describe it (Unleash's ``/api/admin/context``).

    Describing a field restricts nothing at evaluation: a constraint may name any field.
    The description, the legal values (offered by the constraint editor) and whether the
    field is offered for stickiness help the people who write rules.
    """

    name: str
    description: str | None = None
    legal_values: tuple[LegalValue, ...] = ()
    stickiness: bool = False
    sort_order: int = 10
    created_at: dt.datetime | None = None


@attrs.frozen(order=True)
class Tag:
    type: str
    value: str


@attrs.frozen
class FlagDefinition:
    """A flag as admins define it; its per-environment rules live in `FlagEnvironment`."""

    name: str
    project: str = "default"
    type: str = "release"
    description: str | None = None
    stale: bool = False
    impression_data: bool = False
    created_at: dt.datetime = attrs.field(factory=_utc_now)
    archived_at: dt.datetime | None = None
    dependencies: tuple[Dependency, ...] = ()

    @property
    def archived(self) -> bool:
        return self.archived_at is not None


@attrs.frozen
class FlagEnvironment:
    """Whether a flag is on in one environment, and its flag-level (legacy) variants there."""

    flag: str
    environment: str
    enabled: bool = False
    variants: tuple[Variant, ...] = ()


@attrs.frozen
class StrategyPlacement:
    """A strategy where it lives: on a flag, in an environment (``strategy.id`` is set)."""

    flag: str
    environment: str
    strategy: Strategy

    @property
    def id(self) -> str:
        assert self.strategy.id is not None
        return self.strategy.id


@attrs.frozen
class EnvironmentState:
    """A flag in one environment, with its ordered strategies: what the admin API shows."""

    environment: Environment
    enabled: bool
    strategies: tuple[Strategy, ...] = ()
    variants: tuple[Variant, ...] = ()


@attrs.frozen
class FlagDetails:
    """A flag with its state in every environment and its tags."""

    flag: FlagDefinition
    environments: tuple[EnvironmentState, ...] = ()
    tags: tuple[Tag, ...] = ()


@attrs.frozen
class SegmentDefinition:
    """A segment as admins keep it: the rule SDKs get, plus who created it and when."""

    segment: Segment
    created_at: dt.datetime = attrs.field(factory=_utc_now)
    created_by: str | None = None

    @property
    def id(self) -> int:
        return self.segment.id


@attrs.frozen
class SegmentDetails:
    """A segment with what Unleash's segment list shows about its use: how many projects
    and flags use it, counting active flags only (archived ones do not hold it)."""

    definition: SegmentDefinition
    used_in_projects: int = 0
    used_in_features: int = 0


class TokenType(enum.StrEnum):
    ADMIN = "admin"
    CLIENT = "client"
    # Unleash's frontend tokens: for browsers and phones, valid on the Frontend API and
    # OFREP only, scoped like client tokens (projects and one environment).
    FRONTEND = "frontend"


@attrs.frozen
class ApiToken:
    """An API token; only a hash of its secret is kept (the secret is shown once).

    ``id`` names the token where its secret cannot (listings, deleting a lost token): a
    random value the service gives it, so it says nothing about the secret.
    """

    name: str
    type: TokenType
    secret_hash: str
    secret_hint: str
    projects: tuple[str, ...] = ("*",)
    environment: str | None = None
    created_at: dt.datetime = attrs.field(factory=_utc_now)
    id: str = attrs.field(default="", kw_only=True)


@attrs.frozen
class SignalEndpoint:
    id: int
    name: str
    description: str | None = None
    enabled: bool = True
    created_at: dt.datetime = attrs.field(factory=_utc_now)


@attrs.frozen
class SignalEndpointToken:
    id: int
    endpoint_id: int
    name: str
    secret_hash: str
    created_at: dt.datetime = attrs.field(factory=_utc_now)


@attrs.frozen
class Signal:
    id: int
    endpoint_id: int
    token_id: int | None
    payload: Any
    created_at: dt.datetime = attrs.field(factory=_utc_now)


class ActionKind(enum.StrEnum):
    """What an action does; the first two are Unleash's names, the last is flagcore's own."""

    TOGGLE_FEATURE_ON = "TOGGLE_FEATURE_ON"
    TOGGLE_FEATURE_OFF = "TOGGLE_FEATURE_OFF"
    MARK_FEATURE_STALE = "MARK_FEATURE_STALE"

    @property
    def needs_environment(self) -> bool:
        return self is not ActionKind.MARK_FEATURE_STALE


@attrs.frozen
class Action:
    """One step of an action set: do ``kind`` to ``flag`` (in ``environment`` for toggles).

    ``sort_order`` is Unleash's ``sortOrder``: steps run in that order (ties in the order
    given). The flag is always in the action set's own project.
    """

    kind: ActionKind
    flag: str
    environment: str | None = None
    sort_order: int = 1


@attrs.frozen
class ActionSet:
    """What to do when a signal arrives at endpoint ``source`` and its payload passes ``filters``.

    Each filter is a constraint whose ``context_name`` is a path into the signal's JSON, as
    Unleash writes it (``severity``, ``data.service``, ``tags[0]``); they use the engine's
    operators. ``actor_id`` is Unleash's ``actorId`` (a service account there), kept as given.
    """

    id: int
    name: str
    project: str
    source: int
    actions: tuple[Action, ...]
    filters: tuple[Constraint, ...] = ()
    enabled: bool = True
    description: str | None = None
    created_at: dt.datetime = attrs.field(factory=_utc_now)
    actor_id: int | None = None

    @property
    def actor(self) -> str:
        """Who the event log names for the changes this action set makes."""
        return f"action-set:{self.name}"


class ActionState(enum.StrEnum):
    """Unleash's states of an action (and, but for ``not started``, of a whole run)."""

    NOT_STARTED = "not started"
    STARTED = "started"
    SUCCESS = "success"
    FAILED = "failed"


@attrs.frozen
class ActionOutcome:
    action: Action
    state: ActionState
    details: str | None = None


@attrs.frozen
class ActionExecution:
    """One run of an action set for one signal (Unleash's "action set event").

    It keeps the action set as it ran and the signal that set it off, so the log still
    explains a run after either changes; every action has its outcome, in order.
    """

    id: int
    action_set: ActionSet
    signal: Signal
    state: ActionState
    outcomes: tuple[ActionOutcome, ...] = ()
    created_at: dt.datetime = attrs.field(factory=_utc_now)

    @property
    def action_set_id(self) -> int:
        return self.action_set.id

    @property
    def signal_id(self) -> int:
        return self.signal.id

    @property
    def ok(self) -> bool:
        return self.state is ActionState.SUCCESS


@attrs.frozen
class Event:
    """One change, written in the same transaction as the change itself."""

    id: int
    type: str
    created_by: str
    created_at: dt.datetime = attrs.field(factory=_utc_now)
    feature_name: str | None = None
    project: str | None = None
    environment: str | None = None
    data: Mapping[str, Any] | None = attrs.field(default=None, hash=False)
    pre_data: Mapping[str, Any] | None = attrs.field(default=None, hash=False)


@attrs.frozen
class FlagMetrics:
    """Evaluation counts of one flag, from one application, in one hour bucket."""

    flag: str
    app_name: str
    environment: str
    hour: dt.datetime
    yes: int = 0
    no: int = 0
    variants: Mapping[str, int] = attrs.field(factory=dict, hash=False)


@attrs.frozen
class ClientInstance:
    """An SDK instance that registered or sent metrics."""

    app_name: str
    instance_id: str
    environment: str | None = None
    sdk_version: str | None = None
    strategies: tuple[str, ...] = ()
    started: dt.datetime | None = None
    interval: int | None = None
    last_seen: dt.datetime = attrs.field(factory=_utc_now)


@attrs.frozen
class SampledContext:
    """One context of an environment's preview sample (issue 30): seen on the Frontend API
    or OFREP (``source`` "traffic", a reservoir ``slot``) or uploaded ("upload", its line).

    ``context`` is the canonical JSON text, deny-listed fields already left out: the
    sample is read whole and grouped by text, so the text is the value.
    """

    environment: str
    source: str
    slot: int
    context: str
    seen_at: dt.datetime


# Integrations out (issue 31): Unleash's addons, the cursor each keeps over the event log,
# and the log of what was sent.


@attrs.frozen
class Integration:
    """Where flag changes are sent (Unleash's addon): a provider, its parameters, and
    which events go (an empty ``projects`` or ``environments`` is all of them).

    ``signing_secret`` signs every delivery (Standard Webhooks); it is shown once, when
    the integration is made, and never answered again."""

    id: int
    provider: str
    enabled: bool
    description: str | None = None
    parameters: Mapping[str, str] = attrs.field(factory=dict, hash=False)
    events: tuple[str, ...] = ()
    projects: tuple[str, ...] = ()
    environments: tuple[str, ...] = ()
    signing_secret: str = attrs.field(default="", repr=False)
    created_at: dt.datetime = attrs.field(factory=_utc_now)


@attrs.frozen
class IntegrationCursor:
    """How far one integration has got through the event log, and who sends for it now.

    ``event_id`` moves only once the event's delivery was answered (or given up): the
    event log is the outbox, so a restart resumes right after it. ``holder`` and
    ``lease_until`` make one node at a time the sender of an integration."""

    integration_id: int
    event_id: int
    holder: str | None = None
    lease_until: dt.datetime | None = None


@attrs.frozen
class IntegrationDelivery:
    """One event sent to one integration (or given up, or skipped past a bound), as its
    delivery log shows it. ``state``: ``delivered``, ``failed`` or ``overflow``."""

    id: int
    integration_id: int
    event_id: int
    event_type: str
    state: str
    attempts: int
    status_code: int | None = None
    detail: str = ""
    created_at: dt.datetime = attrs.field(factory=_utc_now)


@attrs.frozen
class CodeReference:
    """One place source code names a flag, as `flagcore scan` found it: ``call`` is the
    SDK or OpenFeature method, or None for a string literal equal to the flag's name."""

    flag: str
    file: str
    line: int
    call: str | None = None


@attrs.frozen
class CodeScan:
    """The references one source (a repository, named by whoever scanned it) holds; the
    next scan of the same source replaces them whole, so a removed call disappears."""

    source: str
    references: tuple[CodeReference, ...] = ()
    scanned_at: dt.datetime | None = None


@attrs.frozen
class SourcedReference:
    """A reference with the source (repository) whose scan reported it."""

    source: str
    reference: CodeReference


@attrs.frozen
class FlagStage:
    """A lifecycle stage a flag entered (Unleash 7's ``initial``, ``pre-live``, ``live``,
    ``completed``, ``archived``) and when; ``status`` (``kept``/``discarded``) and its
    ``status_value`` (the variant or state kept) only on ``completed``."""

    flag: str
    stage: str
    entered_at: dt.datetime
    status: str | None = None
    status_value: str | None = None


@attrs.frozen
class FeatureTypeLifetime:
    """A flag type's expected lifetime as someone set it (Unleash's
    ``PUT /api/admin/feature-types/<id>/lifetimes``); None or 0: never potentially stale.
    Only types someone changed have one; the others keep Unleash's defaults."""

    id: str
    lifetime_days: int | None = None


@attrs.frozen
class UpkeepDue:
    """When a recurring piece of the servers' upkeep is next due (the daily reminder of
    potentially stale flags, issue 32): kept in the store and moved on in the unit of work
    that does the job, so exactly one node does it each time, whatever the nodes."""

    name: str
    due_at: dt.datetime
