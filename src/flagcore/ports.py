"""What the service needs from storage, as small protocols; stores implement them.

The port is split by aggregate, so a new backend reads (and implements) one short list
at a time; `Transaction` is their composition and `Store` opens one:

=====================  =======================================================
part                   what it keeps
=====================  =======================================================
`EventLog`             the change log; its newest id is the store's revision
`ProjectRepository`    projects and environments
`FlagRepository`       flags (active and archived) and their per-environment state
`StrategyRepository`   strategies in flags' environments, with their segment links
`SegmentRepository`    segments, with when and by whom they were created
`StrategyDefinitions`  custom strategy definitions (built-ins are not stored)
`TagRepository`        tag types and flags' tags
`TokenRepository`      API tokens, by the hash of their secret
`SignalRepository`     signal endpoints, their tokens, the signals they received
`ActionRepository`     action sets and their executions (once per set and signal)
`MetricsRepository`    metric buckets and SDK instances
`RetentionDeletes`     bounded deletes of what retention no longer keeps
=====================  =======================================================

Promises every part shares (pinned by the port contract suite in `flagcore.testing`):

- A use case opens one `Store.transaction()`: everything read and written inside is one
  atomic unit, committed when the block ends and rolled back, all of it, if it raises.
- ``save_*`` is an upsert by the entity's key; ``delete_*`` of something absent is a
  no-op; ``get_*`` of something absent returns ``None``. Stores do not check domain rules
  (the service does); they only keep what they are given.
- ``create_*``/``add_*`` that return an entity allocate its id: ids grow, are never
  reused in one store, and the given ``id`` (if any) is ignored.
- Lists come in a stated, stable order (see each method).
- Stores raise only `flagcore.errors` exceptions: `flagcore.errors.Conflict` where a
  part says so (a unique key the store enforces), `flagcore.errors.StorageError` for
  anything the backend failed at.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, TypeVar, runtime_checkable

from flagcore.entities import (
    ActionExecution,
    ActionSet,
    ApiToken,
    ClientInstance,
    Environment,
    Event,
    FlagDefinition,
    FlagEnvironment,
    FlagMetrics,
    Project,
    SegmentDefinition,
    Signal,
    SignalEndpoint,
    SignalEndpointToken,
    StrategyDefinition,
    StrategyPlacement,
    Tag,
    TagType,
)
from flagcore.model import Segment
from flagcore.tables import Table

__all__ = [
    "ActionRepository",
    "EventLog",
    "FlagRepository",
    "MetricsRepository",
    "ProjectRepository",
    "Records",
    "ReportsAvailability",
    "RetentionDeletes",
    "RevisionFeed",
    "SegmentRepository",
    "SignalRepository",
    "Store",
    "StrategyDefinitions",
    "StrategyRepository",
    "TagRepository",
    "TokenRepository",
    "Transaction",
]


_E = TypeVar("_E")


class Records(Protocol):
    """The generic keyed repository: any entity described by a `flagcore.tables.Table`.

    A store implements these five (and the metrics and retention parts); the other parts'
    named methods are written over them once, in `flagcore.repositories.KeptEntities`,
    which a store inherits. A store may still write a named method itself where it keeps
    that entity its own way (the SQL stores keep strategies' segment links in a table).
    """

    def get_record(self, table: Table[_E], key: Any) -> _E | None:
        """The entity whose key (`Table.key_of`) is ``key``, or None."""
        ...

    def list_records(
        self,
        table: Table[_E],
        where: Mapping[str, Any] | None = None,
        *,
        limit: int | None = None,
        offset: int = 0,
    ) -> Sequence[_E]:
        """The entities matching every condition of ``where`` (path → a value it equals,
        `flagcore.tables.IS_NULL`, `~.NOT_NULL` or `~.Below`), in the table's order; past
        ``offset`` of them, at most ``limit``."""
        ...

    def save_record(self, table: Table[_E], entity: _E) -> None:
        """Insert, or replace the entity of the same key."""
        ...

    def delete_record(self, table: Table[_E], key: Any) -> None:
        """Delete the entity of ``key`` (absent: a no-op) and every row deleted with it."""
        ...

    def create_record(self, table: Table[_E], entity: _E) -> _E:
        """Store ``entity`` under a fresh integer key (its own is ignored) and return it;
        a row sharing a `Table.unique` group with a stored one is a `~flagcore.errors.Conflict`."""
        ...


class EventLog(Protocol):
    """The change log. ``append_event`` allocates the next id (ids grow by commit order
    and are never reused, even after retention deleted older events): the newest id is
    the store's revision, so every committed write that appends an event moves it, and
    a rolled-back one does not."""

    def append_event(
        self,
        type: str,
        created_by: str,
        *,
        feature_name: str | None = None,
        project: str | None = None,
        environment: str | None = None,
        data: Mapping[str, Any] | None = None,
        pre_data: Mapping[str, Any] | None = None,
    ) -> Event: ...
    def list_events(
        self, *, limit: int = 100, before_id: int | None = None, feature_name: str | None = None
    ) -> Sequence[Event]: ...


class ProjectRepository(Protocol):
    """Projects (listed by id) and environments (listed by sort order, then name)."""

    def get_project(self, project_id: str) -> Project | None: ...
    def list_projects(self) -> Sequence[Project]: ...
    def save_project(self, project: Project) -> None: ...
    def delete_project(self, project_id: str) -> None: ...
    def get_environment(self, name: str) -> Environment | None: ...
    def list_environments(self) -> Sequence[Environment]: ...
    def save_environment(self, environment: Environment) -> None: ...


class FlagRepository(Protocol):
    """Flags, active and archived, and their per-environment state. ``list_flags`` is
    ordered by creation time, then name; ``archived=None`` lists both kinds.
    ``list_flag_environments`` is ordered by flag, then environment."""

    def get_flag(self, name: str) -> FlagDefinition | None: ...
    def list_flags(
        self, *, project: str | None = None, archived: bool | None = False
    ) -> Sequence[FlagDefinition]: ...
    def save_flag(self, flag: FlagDefinition) -> None: ...
    def delete_flag(self, name: str) -> None:
        """Delete the flag with its environments, strategies, segment links and tags."""
        ...

    def get_flag_environment(self, flag: str, environment: str) -> FlagEnvironment | None: ...
    def list_flag_environments(
        self, *, flag: str | None = None, environment: str | None = None
    ) -> Sequence[FlagEnvironment]: ...
    def save_flag_environment(self, state: FlagEnvironment) -> None: ...


class StrategyRepository(Protocol):
    """Strategies placed in a flag's environment, with their segment links
    (``strategy.segments``, kept in the given order). Saving a strategy replaces its
    segment links; deleting its flag deletes it."""

    def get_strategy(self, strategy_id: str) -> StrategyPlacement | None: ...
    def list_strategies(
        self, *, flag: str | None = None, environment: str | None = None
    ) -> Sequence[StrategyPlacement]:
        """Ordered by flag, environment, ``sort_order``, then id."""
        ...

    def save_strategy(self, placement: StrategyPlacement) -> None: ...
    def delete_strategy(self, strategy_id: str) -> None: ...
    def strategies_using_segment(self, segment_id: int) -> Sequence[StrategyPlacement]: ...


class SegmentRepository(Protocol):
    """Segments, listed by id; ``create_segment`` allocates the id."""

    def get_segment(self, segment_id: int) -> Segment | None: ...
    def list_segments(self) -> Sequence[Segment]: ...
    def get_segment_definition(self, segment_id: int) -> SegmentDefinition | None:
        """The segment with when and by whom it was created."""
        ...

    def list_segment_definitions(self) -> Sequence[SegmentDefinition]:
        """Every segment with its creation, ordered by id."""
        ...

    def create_segment(
        self,
        segment: Segment,
        *,
        created_by: str | None = None,
        created_at: dt.datetime | None = None,
    ) -> Segment:
        """Store ``segment`` under a fresh id (its own ``id`` is ignored) and return it.

        ``created_at`` defaults to now; creation is kept as it was by `save_segment`.
        """
        ...

    def save_segment(self, segment: Segment) -> None: ...
    def delete_segment(self, segment_id: int) -> None: ...


class StrategyDefinitions(Protocol):
    """Custom strategy definitions by name, listed by name (built-ins are not stored)."""

    def get_strategy_definition(self, name: str) -> StrategyDefinition | None: ...
    def list_strategy_definitions(self) -> Sequence[StrategyDefinition]: ...
    def save_strategy_definition(self, definition: StrategyDefinition) -> None: ...


class TagRepository(Protocol):
    """Tag types (listed by name) and flags' tags. Adding a tag a flag has is a no-op;
    deleting a tag type or a flag deletes its tags."""

    def get_tag_type(self, name: str) -> TagType | None: ...
    def list_tag_types(self) -> Sequence[TagType]: ...
    def save_tag_type(self, tag_type: TagType) -> None: ...
    def delete_tag_type(self, name: str) -> None: ...
    def list_flag_tags(self, flag: str | None = None) -> Sequence[tuple[str, Tag]]:
        """``(flag name, tag)`` pairs, for one flag or all."""
        ...

    def add_flag_tag(self, flag: str, tag: Tag) -> None: ...
    def remove_flag_tag(self, flag: str, tag: Tag) -> None: ...


class TokenRepository(Protocol):
    """API tokens by the hash of their secret (the secret is never stored), listed by
    creation time."""

    def get_token(self, secret_hash: str) -> ApiToken | None: ...
    def list_tokens(self) -> Sequence[ApiToken]: ...
    def save_token(self, token: ApiToken) -> None: ...
    def delete_token(self, secret_hash: str) -> None: ...


class SignalRepository(Protocol):
    """Signal endpoints (names unique: a second endpoint of one name raises
    `flagcore.errors.Conflict`), their tokens and the signals they received. ``create_*``
    and ``add_signal`` allocate ids; endpoints and tokens are listed by id."""

    def create_signal_endpoint(
        self, name: str, description: str | None, enabled: bool, created_at: dt.datetime
    ) -> SignalEndpoint: ...
    def get_signal_endpoint(self, endpoint_id: int) -> SignalEndpoint | None: ...
    def find_signal_endpoint(self, name: str) -> SignalEndpoint | None: ...
    def list_signal_endpoints(self) -> Sequence[SignalEndpoint]: ...
    def save_signal_endpoint(self, endpoint: SignalEndpoint) -> None: ...
    def delete_signal_endpoint(self, endpoint_id: int) -> None:
        """Delete the endpoint with its tokens and signals."""
        ...

    def create_signal_endpoint_token(
        self, endpoint_id: int, name: str, secret_hash: str, created_at: dt.datetime
    ) -> SignalEndpointToken: ...
    def list_signal_endpoint_tokens(self, endpoint_id: int) -> Sequence[SignalEndpointToken]: ...
    def delete_signal_endpoint_token(self, token_id: int) -> None: ...
    def add_signal(
        self, endpoint_id: int, token_id: int | None, payload: Any, created_at: dt.datetime
    ) -> Signal: ...
    def list_signals(
        self, *, endpoint_id: int | None = None, limit: int = 50, before_id: int | None = None
    ) -> Sequence[Signal]:
        """Newest first."""
        ...


class ActionRepository(Protocol):
    """Action sets (listed by id) and the record of their runs. Deleting an action set
    deletes its executions; deleting its source endpoint deletes the set."""

    def create_action_set(self, action_set: ActionSet) -> ActionSet:
        """Store under a fresh id (the given ``id`` is ignored) and return it."""
        ...

    def get_action_set(self, action_set_id: int) -> ActionSet | None: ...
    def list_action_sets(
        self, *, project: str | None = None, source: int | None = None
    ) -> Sequence[ActionSet]: ...
    def save_action_set(self, action_set: ActionSet) -> None: ...
    def delete_action_set(self, action_set_id: int) -> None: ...
    def add_action_execution(self, execution: ActionExecution) -> ActionExecution:
        """Store under a fresh id and return it.

        An action set runs once per signal: a second execution of the same action set for
        the same signal raises `flagcore.errors.Conflict` (a store with several writers
        enforces it in the database, so two nodes cannot both run it).
        """
        ...

    def list_action_executions(
        self, *, action_set_id: int | None = None, limit: int = 50, offset: int = 0
    ) -> Sequence[ActionExecution]:
        """Newest first; ``offset`` skips that many of the newest."""
        ...


class MetricsRepository(Protocol):
    """Hourly metric buckets (listed by hour, app, environment) and SDK instances
    (listed by app name, then instance id). Counts saturate at 2**63 - 1."""

    def add_flag_metrics(
        self,
        rows: Iterable[FlagMetrics],
        *,
        max_new: int | None = None,
        max_variants: int | None = None,
    ) -> int:
        """Add the counts to the stored ones of the same flag, app, environment and hour;
        return how many buckets were new.

        SDK traffic decides what is written, so both sizes can be bounded: at most
        ``max_new`` buckets are created (a row that would make one more is dropped, rows
        of existing buckets still add up), and a bucket keeps at most ``max_variants``
        variant names (a new name past it is dropped, known names still add up). None: no
        bound.
        """
        ...

    def list_flag_metrics(
        self, flag: str, *, since: dt.datetime | None = None
    ) -> Sequence[FlagMetrics]:
        """The flag's hour buckets (of ``since`` and later), by hour, app, environment."""
        ...

    def list_flag_metrics_since(self, hour: dt.datetime, *, limit: int) -> Sequence[FlagMetrics]:
        """The buckets of ``hour`` and later, of every flag, ordered by flag, app name,
        environment and hour; at most ``limit`` of them (a page's worth, whatever SDKs sent)."""
        ...

    def flag_projects(self, names: Collection[str]) -> Mapping[str, str]:
        """The project of each of ``names`` that is a flag (active or archived); one query
        for a whole metrics report, whatever names it makes up."""
        ...

    def save_client_instance(self, instance: ClientInstance, *, create: bool = True) -> bool:
        """Save (merge into the stored one) and say whether the instance was new; with
        ``create`` False an instance not yet stored is not saved."""
        ...

    def list_client_instances(self) -> Sequence[ClientInstance]: ...

    def take_flag_metrics_before(self, hour: dt.datetime, limit: int) -> Sequence[FlagMetrics]:
        """Delete the hour buckets whose hour is before ``hour`` (at most ``limit``,
        oldest first) and return them, for the roll-up into days: a bucket is taken by
        one transaction only, so two nodes rolling up at once never count it twice."""
        ...

    def add_daily_flag_metrics(
        self, rows: Iterable[FlagMetrics], *, max_variants: int | None = None
    ) -> int:
        """Add the counts to the day buckets of the same flag, app, environment and day
        (``hour`` is the day's midnight, UTC), as `add_flag_metrics` adds hours; return
        how many day buckets were new."""
        ...

    def list_daily_flag_metrics(
        self, flag: str, *, since: dt.datetime | None = None
    ) -> Sequence[FlagMetrics]:
        """The flag's day buckets (of ``since`` and later), by day, app, environment."""
        ...

    def rename_usage_environment(self, old: str, new: str) -> int:
        """Move the hour and day buckets and the SDK instances of environment ``old`` to
        ``new`` (an environment renamed); a bucket ``new`` already holds (SDKs that named
        it, an environment of that name deleted before) adds the moved counts up as
        `add_flag_metrics` does. Returns how many buckets and instances moved."""
        ...


class RetentionDeletes(Protocol):
    """Retention: each deletes at most ``limit`` rows, oldest first, and says how many."""

    def delete_flag_metrics_before(self, hour: dt.datetime, limit: int) -> int:
        """Delete metric buckets whose hour is before ``hour``."""
        ...

    def delete_client_instances_seen_before(self, time: dt.datetime, limit: int) -> int: ...
    def delete_daily_flag_metrics_before(self, day: dt.datetime, limit: int) -> int:
        """Delete day buckets whose day is before ``day``."""
        ...

    def delete_signals_before(self, time: dt.datetime, limit: int) -> int: ...
    def delete_signals_beyond_newest(self, endpoint_id: int, keep: int, limit: int) -> int:
        """Delete the endpoint's signals older than its ``keep`` newest."""
        ...

    def delete_events_before(self, time: dt.datetime, limit: int) -> int:
        """Delete events created before ``time``, never the newest (it is the revision)."""
        ...


class Transaction(
    Records,
    EventLog,
    ProjectRepository,
    FlagRepository,
    StrategyRepository,
    SegmentRepository,
    StrategyDefinitions,
    TagRepository,
    TokenRepository,
    SignalRepository,
    ActionRepository,
    MetricsRepository,
    RetentionDeletes,
    Protocol,
):
    """Reads and writes inside one atomic unit of work: every part of the port (the
    service calls the named methods; `Records` is what they are written over)."""


# --- What the service's use cases combine ---
# A use case is typed on the parts it reads and writes, so the type of a unit of work says
# what it touches. A store implements `Transaction`, which is every one of these; they are
# the service's vocabulary, not the port's, so they stay off `__all__` (a store needs
# none of them). A combination only one service module uses is declared there instead.


class FlagLookups(FlagRepository, ProjectRepository, Protocol):
    """A flag looked up by name, with its project to say which name is wrong."""


class FlagWrite(FlagLookups, EventLog, Protocol):
    """A flag's own settings or its switch in an environment changed, with the event."""


class KeptWrite(Records, EventLog, Protocol):
    """A concept kept through the generic repository (users, roles, groups, change
    requests, release plans, integrations...) changed, with the event."""


class StrategyChecks(StrategyDefinitions, SegmentRepository, Protocol):
    """What checking a strategy reads: the strategies defined, the segments it names."""


class StrategyWrite(FlagWrite, StrategyRepository, Protocol):
    """A flag's strategies removed, reordered or added as they are, and the switch that
    follows them."""


class SegmentWrite(StrategyWrite, SegmentRepository, Protocol):
    """A segment changed or deleted, knowing the strategies (and their flags) using it."""


class FlagRead(FlagLookups, StrategyRepository, TagRepository, Protocol):
    """A flag with its state, strategies and tags in every environment."""


class TagWrite(TagRepository, EventLog, Protocol):
    """A flag tagged or untagged, with the event."""


class RulesWrite(SegmentWrite, StrategyChecks, Protocol):
    """A flag's rules changed: its strategies placed, changed, removed or reordered, the
    switch that follows them, the segments they use, its variants and dependencies; every
    change a change request or a release plan makes goes through these parts."""


class KeptRulesWrite(RulesWrite, Records, Protocol):
    """A kept concept whose changes are made to flags' rules (a change request applied, a
    release plan's milestone started): 7 of the port's 13 parts."""


class Store(Protocol):
    """Durable (or not) state behind the service."""

    def transaction(self, *, write: bool = True) -> AbstractContextManager[Transaction]:
        """One atomic unit: commits when the block ends, rolls back if it raises.

        ``write=False`` promises only reads, so a store may use a cheaper snapshot.
        """
        ...

    def revision(self) -> int:
        """The id of the newest event: grows with every change, so a cache keyed on it is fresh.

        Called on every SDK request, from the server's event loop: it must be cheap and
        must not wait for a write in progress.
        """
        ...

    def close(self) -> None: ...


@runtime_checkable
class RevisionFeed(Protocol):
    """A capability beyond `Store`: a store that learns of newer revisions by itself
    (other nodes' writes: PostgreSQL's NOTIFY) says so at once, so streams need not wait
    for the next revision check. A store without it is polled through `Store.revision`."""

    def on_revision(self, callback: Callable[[int], None]) -> None:
        """Call ``callback(revision)`` whenever a newer revision is learnt, on the thread
        that learnt it: keep it short."""
        ...


@runtime_checkable
class ReportsAvailability(Protocol):
    """A capability beyond `Store`: a store over a database that can go away says whether
    it answers now (while it does not, what was read last is served and writes fail)."""

    @property
    def available(self) -> bool: ...
