"""The use cases behind every admin operation, with Unleash's rules.

HTTP handlers are thin calls into `Service`; an in-process caller gets the same rules.
`Service` is made of parts, one per area, each a small class given what it uses in its
``__init__``: the shared `ServiceContext` (store, limits, clock, unit of work, event
writer) and the other parts it calls. ``service.flags.create_flag(...)``,
``service.environments.set_environment_enabled(...)``: the part names the area.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from flagcore.context_sample import ContextSampler
from flagcore.integration_providers import MASKED, PROVIDERS
from flagcore.limits import Limits
from flagcore.ports import Store
from flagcore.preview import ProposedChange
from flagcore.service.actions import ActionSets
from flagcore.service.archive import Archive
from flagcore.service.change_request_previews import ChangeRequestPreviews
from flagcore.service.change_requests import (
    ChangeRequestConfig,
    ChangeRequests,
    ChangeRequestView,
    DraftChange,
)
from flagcore.service.cleanup import ArchiveSuggestion, CleanupSuggestions
from flagcore.service.client import ClientQuery, ClientView, ClientVocabulary, LiveEngine
from flagcore.service.client_spec import client_features_format
from flagcore.service.code_references import CodeReferences
from flagcore.service.context import SYSTEM, ServiceContext, utc_now
from flagcore.service.context_fields import BUILT_IN_CONTEXT_FIELDS, ContextFields
from flagcore.service.defaults import ensure_defaults
from flagcore.service.dependencies import Dependencies
from flagcore.service.environments import ENVIRONMENT_TYPES, UNSCOPED_ENVIRONMENT, Environments
from flagcore.service.events import EventLog
from flagcore.service.exporting import Exporting
from flagcore.service.feature_types import (
    REMINDER_EVENT,
    FeatureType,
    FeatureTypes,
    is_potentially_stale,
)
from flagcore.service.flag_overview import (
    FlagCounts,
    FlagOverview,
    FlagOverviews,
    FlagQuery,
    FlagRow,
    FlagSearchPage,
)
from flagcore.service.flags import Flags
from flagcore.service.frontend import (
    STANDARD_FIELDS,
    FrontendView,
    build_frontend_view,
    bulk_lists_off_flags,
    frontend_context,
)
from flagcore.service.groups import MAX_GROUP_MAPPINGS, Groups, GroupView, NewGroup
from flagcore.service.impact_metrics import ImpactMetrics
from flagcore.service.import_plan import ImportCheck
from flagcore.service.importing import Importing, ImportReport
from flagcore.service.instance_copy import CopyReport, InstanceCopy, KindReport
from flagcore.service.instances import ClientInstances
from flagcore.service.integration_outbox import (
    IntegrationOutbox,
    LeasedEvents,
    OutboxBounds,
    ResendWork,
)
from flagcore.service.integrations import Integrations, IntegrationSpec, custom_headers
from flagcore.service.lifecycle import Lifecycle, StageTime
from flagcore.service.metrics import (
    MAX_COUNT,
    CheckedReport,
    HeldCounts,
    Metrics,
    RecordedMetrics,
    known_variants_only,
)
from flagcore.service.personal_tokens import (
    MAX_PERSONAL_TOKEN_LIFETIME,
    MAX_PERSONAL_TOKENS,
    PERSONAL_TOKEN_PREFIX,
    CreatedPersonalToken,
    PersonalTokenHolder,
    PersonalTokens,
)
from flagcore.service.previews import PreviewInput, Previews
from flagcore.service.projects import Projects
from flagcore.service.provider_sign_in import ProviderIdentity, ProviderRules, ProviderSignIn
from flagcore.service.release_plans import ReleasePlans
from flagcore.service.release_rules import AGGREGATION_MODES, check_transition, checked_safeguard
from flagcore.service.release_templates import MAX_MILESTONES, ReleaseTemplates
from flagcore.service.retention import PruneReport, Retention, RetentionSettings
from flagcore.service.roles import NewRole, ProjectAccess, Roles
from flagcore.service.segments import Segments
from flagcore.service.service_accounts import ServiceAccounts
from flagcore.service.sessions import (
    PASSWORD_SIGN_IN_OFF,
    SIGN_IN_REFUSED,
    PasswordCandidate,
    SessionHolder,
    Sessions,
    StartedSession,
)
from flagcore.service.signal_intake import (
    SIGNAL_PAYLOAD_MAX_DEPTH,
    SignalCredentials,
    SignalSender,
)
from flagcore.service.signals import CreatedSignalToken, Signals
from flagcore.service.storage import Storage
from flagcore.service.strategies import Strategies
from flagcore.service.strategy_definitions import BUILTIN_DEFINITIONS, StrategyDefinitions
from flagcore.service.tags import Tags
from flagcore.service.tokens import CreatedToken, Tokens, TokenSpec, hash_secret
from flagcore.service.usage_history import (
    HOURS_BACK_MAX,
    AppLastSeen,
    EnvironmentUsage,
    UsageHistory,
    UsageSeries,
    UsageSummary,
)
from flagcore.service.users import RESET_LINK_LIFETIME, CreatedLink, NewUser, Users
from flagcore.service.variants import FlagVariants
from flagcore.signal_matching import match_action_sets, matching_action_sets

# What adapters and embedding callers use; the part classes are reached through
# `Service` (``service.flags``, ...), not imported.
__all__ = [
    "AGGREGATION_MODES",
    "BUILTIN_DEFINITIONS",
    "BUILT_IN_CONTEXT_FIELDS",
    "ENVIRONMENT_TYPES",
    "HOURS_BACK_MAX",
    "MASKED",
    "MAX_COUNT",
    "MAX_GROUP_MAPPINGS",
    "MAX_MILESTONES",
    "MAX_PERSONAL_TOKENS",
    "MAX_PERSONAL_TOKEN_LIFETIME",
    "PASSWORD_SIGN_IN_OFF",
    "PERSONAL_TOKEN_PREFIX",
    "PROVIDERS",
    "REMINDER_EVENT",
    "RESET_LINK_LIFETIME",
    "SIGNAL_PAYLOAD_MAX_DEPTH",
    "SIGN_IN_REFUSED",
    "STANDARD_FIELDS",
    "SYSTEM",
    "UNSCOPED_ENVIRONMENT",
    "AppLastSeen",
    "ArchiveSuggestion",
    "ChangeRequestConfig",
    "ChangeRequestView",
    "CheckedReport",
    "ClientQuery",
    "ClientVocabulary",
    "ContextSampler",
    "CopyReport",
    "CreatedLink",
    "CreatedPersonalToken",
    "CreatedSignalToken",
    "CreatedToken",
    "DraftChange",
    "EnvironmentUsage",
    "FeatureType",
    "FlagCounts",
    "FlagOverview",
    "FlagQuery",
    "FlagRow",
    "FlagSearchPage",
    "FrontendView",
    "GroupView",
    "HeldCounts",
    "ImportCheck",
    "ImportReport",
    "InstanceCopy",
    "IntegrationSpec",
    "KindReport",
    "LeasedEvents",
    "LiveEngine",
    "NewGroup",
    "NewRole",
    "NewUser",
    "OutboxBounds",
    "PasswordCandidate",
    "PersonalTokenHolder",
    "PreviewInput",
    "ProjectAccess",
    "ProposedChange",
    "ProviderIdentity",
    "ProviderRules",
    "PruneReport",
    "RecordedMetrics",
    "ResendWork",
    "RetentionSettings",
    "Service",
    "ServiceContext",
    "SessionHolder",
    "SignalCredentials",
    "SignalSender",
    "StageTime",
    "StartedSession",
    "TokenSpec",
    "UsageHistory",
    "UsageSeries",
    "UsageSummary",
    "build_frontend_view",
    "bulk_lists_off_flags",
    "check_transition",
    "checked_safeguard",
    "client_features_format",
    "custom_headers",
    "frontend_context",
    "hash_secret",
    "is_potentially_stale",
    "known_variants_only",
    "match_action_sets",
    "matching_action_sets",
]


class Service:
    """Every use case of flagcore over one `flagcore.ports.Store`, grouped in parts.

    Creating a service makes sure the store has Unleash's defaults: project ``default``,
    environments ``development`` and ``production``, and tag type ``simple``.

    ``pause_gc=False`` keeps client snapshots (and `LiveEngine` compiles) from pausing the
    process's cyclic garbage collector; pausing makes a 10,000-flag snapshot ~20% faster
    (see flagcore.gc_pause and docs/engine.md).
    """

    def __init__(
        self,
        store: Store,
        *,
        limits: Limits | None = None,
        clock: Callable[[], dt.datetime] = utc_now,
        pause_gc: bool = True,
    ) -> None:
        context = ServiceContext(store, limits=limits, clock=clock)
        self.context = context
        self.store = store
        self.limits = context.limits
        self.clock = clock
        # Parts that call no other part.
        self.events = EventLog(context)
        self.projects = Projects(context)
        self.tags = Tags(context)
        self.context_fields = ContextFields(context)
        self.strategy_definitions = StrategyDefinitions(context)
        self.variants = FlagVariants(context)
        self.dependencies = Dependencies(context)
        self.archive = Archive(context)
        self.segments = Segments(context)
        self.tokens = Tokens(context)
        self.instances = ClientInstances(context)
        self.retention = Retention(context)
        self.signals = Signals(context)
        self.client = ClientView(context, pause_gc=pause_gc)
        self.flag_overviews = FlagOverviews(context)
        self.storage = Storage(context)
        self.users = Users(context)
        self.sessions = Sessions(context)
        self.personal_tokens = PersonalTokens(context)
        self.provider_sign_in = ProviderSignIn(context)
        self.roles = Roles(context)
        self.groups = Groups(context)
        self.integrations = Integrations(context)
        self.integration_outbox = IntegrationOutbox(context)
        # Parts that call others, given them here: the only links between parts.
        self.flags = Flags(context, tags=self.tags)
        self.strategies = Strategies(context, definitions=self.strategy_definitions)
        self.environments = Environments(context, strategies=self.strategies)
        self.actions = ActionSets(context, flags=self.flags, environments=self.environments)
        self.metrics = Metrics(context, instances=self.instances)
        self.service_accounts = ServiceAccounts(context, personal_tokens=self.personal_tokens)
        self.previews = Previews(context, client=self.client, strategies=self.strategies)
        # Moving in from Unleash and out again (branch importer): export files, imports.
        self.importing = Importing(context, strategies=self.strategies)
        self.exporting = Exporting(context)
        self.impact_metrics = ImpactMetrics(context)
        self.release_plans = ReleasePlans(
            context,
            strategies=self.strategies,
            safeguard_reading=self.impact_metrics.safeguard_value,
        )
        self.change_requests = ChangeRequests(
            context,
            strategies=self.strategies,
            environments=self.environments,
            variants=self.variants,
            dependencies=self.dependencies,
            archive=self.archive,
            segments=self.segments,
            release_plans=self.release_plans,
        )
        self.change_request_previews = ChangeRequestPreviews(
            context, change_requests=self.change_requests, previews=self.previews
        )
        self.code_references = CodeReferences(context)
        self.lifecycle = Lifecycle(context)
        self.feature_types = FeatureTypes(context)
        self.cleanup = CleanupSuggestions(context)
        self.usage_history = UsageHistory(context)
        self.release_templates = ReleaseTemplates(context)
        ensure_defaults(context)

    @property
    def local_writes(self) -> int:
        """How many writes went through this service: in-process readers (the server's
        client cache, `LiveEngine`) compare it to notice a write at once."""
        return self.context.local_writes
