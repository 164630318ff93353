"""Environments, and turning a flag on or off in one (Unleash's environment switch)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import attrs

from flagcore.entities import Environment, EnvironmentUsage, FlagEnvironment, StrategyPlacement
from flagcore.errors import Conflict, ErrorDetail, InvalidInput, NameConflict, NotFound
from flagcore.permissions import grants_of
from flagcore.ports import (
    ActionRepository,
    FlagRepository,
    MetricsRepository,
    ProjectRepository,
    Records,
    StrategyRepository,
    StrategyWrite,
    TokenRepository,
)
from flagcore.service.change_request_gate import refuse_direct_change
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.lookups import active_flag, require_environment
from flagcore.service.strategies import Strategies, new_strategy_id
from flagcore.tables import (
    CHANGE_REQUEST_SETTINGS,
    CHANGE_REQUESTS,
    CONTEXT_SAMPLES,
    ENVIRONMENTS,
    FLAG_ENVIRONMENTS,
    IMPACT_POINTS,
    IMPACT_SERIES,
    INTEGRATIONS,
    RELEASE_PLANS,
    ROLES,
    Table,
)
from flagcore.validation import check_name, check_sort_order, check_text, next_sort_order
from flagcore.wire.event_data import (
    EnvironmentChangeData,
    EnvironmentCreatedData,
    EnvironmentDeletedData,
    EnvironmentRenamedData,
    NameData,
)

__all__ = ["UNSCOPED_ENVIRONMENT", "Environments"]

UNSCOPED_ENVIRONMENT = "development"
"""The environment SDK and Frontend API requests get when nothing names one (no token, or
an admin token, and no ``environment`` asked): Unleash's rule. It is never renamed (see
`Environments.rename_environment`)."""


class _EnvironmentUsers(TokenRepository, ActionRepository, Records, Protocol):
    """What may name an environment: API tokens, action sets, custom roles' grants."""


class _Renaming(
    FlagRepository,
    StrategyRepository,
    TokenRepository,
    ActionRepository,
    MetricsRepository,
    Records,
    Protocol,
):
    """Every row that names an environment: flags' state and strategies, tokens, action
    sets, SDK usage, and what is kept as records (roles, change requests, release plans,
    integrations, samples, impact metrics)."""


class Environments:
    """Environments and the per-flag switch; turning a flag on asks `Strategies` for an
    active strategy there (Unleash's implicit full rollout)."""

    def __init__(self, context: ServiceContext, *, strategies: Strategies) -> None:
        self._context = context
        self._strategies = strategies

    def list_environments(self) -> list[Environment]:
        with self._context.read() as tx:
            return list(tx.list_environments())

    def get_environment(self, name: str) -> Environment:
        """One environment, or `NotFound` (Unleash's ``GET /api/admin/environments/{name}``)."""
        with self._context.read() as tx:
            return _environment(tx, name)

    def environment_usage(self, name: str) -> EnvironmentUsage:
        """What deleting ``name`` would take with it, and what would refuse it."""
        with self._context.read() as tx:
            environment = _environment(tx, name)
            states = tx.list_flag_environments(environment=name)
            return EnvironmentUsage(
                environment,
                flags_on=sum(1 for s in states if s.enabled),
                strategies=len(tx.list_strategies(environment=name)),
                users=tuple(_users_of(tx, name)),
            )

    def create_environment(
        self,
        name: str,
        type: str = "development",
        sort_order: int | None = None,
        *,
        actor: Actor = SYSTEM,
    ) -> Environment:
        actor = authorize(actor, "create_environment")
        check_name(name, "environment")
        if sort_order is not None:
            check_sort_order(sort_order, "$.sortOrder")
        with self._context.unit() as tx:
            if tx.get_environment(name):
                raise NameConflict(f'an environment named "{name}" already exists')
            order = sort_order
            if order is None:
                orders = (e.sort_order for e in tx.list_environments())
                order = next_sort_order(orders, "$.sortOrder", start=1)
            environment = Environment(name, check_environment_type(type), order)
            tx.save_environment(environment)
            self._context.record_event(
                tx,
                "environment-created",
                actor,
                environment=name,
                data=EnvironmentCreatedData(type),
            )
        return environment

    def update_environment(
        self, name: str, *, type: str, sort_order: int | None = None, actor: Actor = SYSTEM
    ) -> Environment:
        """Unleash's ``PUT /api/admin/environments/update/{name}``: the type, and the sort
        order when one is given (left out: kept). The name is changed by
        `rename_environment` only."""
        actor = authorize(actor, "update_environment")
        check_environment_type(type)
        if sort_order is not None:
            check_sort_order(sort_order, "$.sortOrder")
        with self._context.unit() as tx:
            before = _environment(tx, name)
            after = attrs.evolve(
                before,
                type=type,
                sort_order=before.sort_order if sort_order is None else sort_order,
            )
            if after != before:
                tx.save_environment(after)
                self._context.record_event(
                    tx,
                    "environment-updated",
                    actor,
                    environment=name,
                    data=EnvironmentChangeData(after.type, after.sort_order),
                    pre_data=EnvironmentChangeData(before.type, before.sort_order),
                )
        return after

    def set_environment_sort_orders(
        self, orders: Mapping[str, int], *, actor: Actor = SYSTEM
    ) -> list[Environment]:
        """Unleash's ``PUT /api/admin/environments/sort-order`` (``{name: order}``): the
        named environments take their orders, the others keep theirs. An unknown name
        refuses the whole change (Unleash skips it silently)."""
        actor = authorize(actor, "set_environment_sort_orders")
        for name, order in orders.items():
            check_sort_order(order, f"$.{name}")
        with self._context.unit() as tx:
            for name in orders:
                if tx.get_environment(name) is None:
                    raise NotFound(
                        f'there is no environment "{name}"',
                        [ErrorDetail("no such environment", f"$.{name}")],
                    )
            for name, order in orders.items():
                before = _environment(tx, name)
                if before.sort_order != order:
                    tx.save_environment(attrs.evolve(before, sort_order=order))
                    self._context.record_event(
                        tx,
                        "environment-updated",
                        actor,
                        environment=name,
                        data=EnvironmentChangeData(sort_order=order),
                        pre_data=EnvironmentChangeData(sort_order=before.sort_order),
                    )
            return list(tx.list_environments())

    def toggle_environment(self, name: str, enabled: bool, *, actor: Actor = SYSTEM) -> None:
        """Unleash's ``POST /api/admin/environments/{name}/on`` and ``/off``: a disabled
        (deprecated) environment is kept with every flag's rules in it, and SDKs scoped to
        it are still served, as in Unleash; the UI marks it."""
        actor = authorize(actor, "toggle_environment")
        with self._context.unit() as tx:
            before = _environment(tx, name)
            if before.enabled != enabled:
                tx.save_environment(attrs.evolve(before, enabled=enabled))
                self._context.record_event(
                    tx,
                    "environment-updated",
                    actor,
                    environment=name,
                    data=EnvironmentChangeData(enabled=enabled),
                    pre_data=EnvironmentChangeData(enabled=before.enabled),
                )

    def delete_environment(self, name: str, *, actor: Actor = SYSTEM) -> None:
        """Delete an environment with every flag's rules in it (their switch, variants and
        strategies), in one unit of work, as Unleash does. Refused while it is the last
        environment, or while an API token, an action set or a custom role names it:
        each would silently change meaning (a token's SDKs would get nothing)."""
        actor = authorize(actor, "delete_environment")
        with self._context.unit() as tx:
            environment = _environment(tx, name)
            if len(tx.list_environments()) == 1:
                raise Conflict(f'"{name}" is the last environment; there must be one')
            users = _users_of(tx, name)
            if users:
                shown = "; ".join(users[:20]) + ("; …" if len(users) > 20 else "")
                raise Conflict(
                    f'environment "{name}" is in use: {shown}',
                    [ErrorDetail(use, None) for use in users],
                )
            strategies = tx.list_strategies(environment=name)
            states = tx.list_flag_environments(environment=name)
            for placement in strategies:
                tx.delete_strategy(placement.strategy.id or "")
            for state in states:
                tx.delete_record(FLAG_ENVIRONMENTS, (state.flag, name))
            tx.delete_record(ENVIRONMENTS, name)
            self._context.record_event(
                tx,
                "environment-deleted",
                actor,
                environment=name,
                pre_data=EnvironmentDeletedData(
                    name, environment.type, len(states), len(strategies)
                ),
            )

    def rename_environment(self, name: str, new_name: str, *, actor: Actor = SYSTEM) -> Environment:
        """flagcore's own (Unleash renames no environment): ``name`` becomes ``new_name``
        everywhere it is kept, in one unit of work: every flag's switch, variants and
        strategies there, API tokens scoped to it (their secret keeps the old name as it
        was written, and still works), action set steps, custom roles' grants, change
        request settings and requests, release plans, integrations' environment filters,
        the preview's context sample, impact metrics, and SDK usage (hour and day buckets,
        instances). The event log keeps the name each event was written with; one
        ``environment-renamed`` event names both.

        Refused: ``new_name`` not a valid name (400, ``$.name``) or the current name
        (400), an unknown ``name`` (404), a taken ``new_name`` (409), and renaming
        `UNSCOPED_ENVIRONMENT` (409): requests that name no environment would silently
        get another (or none)."""
        actor = authorize(actor, "rename_environment")
        check_name(new_name, "environment")
        with self._context.unit() as tx:
            before = _environment(tx, name)
            if name == UNSCOPED_ENVIRONMENT:
                raise Conflict(
                    f'"{name}" is not renamed: SDK and Frontend API requests that name no '
                    "environment are served it; clone it instead",
                    [ErrorDetail("the environment of requests naming none", None)],
                )
            if new_name == name:
                raise InvalidInput(
                    f'the environment is already named "{name}"',
                    [ErrorDetail("the current name", "$.name")],
                )
            if tx.get_environment(new_name):
                raise NameConflict(
                    f'an environment named "{new_name}" already exists',
                    [ErrorDetail("taken", "$.name")],
                )
            after = attrs.evolve(before, name=new_name)
            tx.save_environment(after)  # first: the rows below refer to it
            moved = _move_environment(tx, name, new_name)
            tx.delete_record(ENVIRONMENTS, name)
            self._context.record_event(
                tx,
                "environment-renamed",
                actor,
                environment=new_name,
                data=moved,
                pre_data=NameData(name),
            )
        return after

    def clone_environment(
        self,
        name: str,
        new_name: str,
        type: str,
        *,
        projects: Sequence[str] = (),
        clone_permissions: bool = False,
        actor: Actor = SYSTEM,
    ) -> Environment:
        """Unleash's ``POST /api/admin/environments/{name}/clone``: a new environment
        (placed last) holding a copy of every flag's switch, variants and strategies in
        ``name`` (the flags of ``projects``, or of every project when none is named), with
        new strategy ids; with ``clone_permissions``, each custom role's grants in ``name``
        are granted in the new one too. One unit of work."""
        actor = authorize(actor, "clone_environment")
        check_name(new_name, "environment")
        check_environment_type(type)
        with self._context.unit() as tx:
            _environment(tx, name)
            if tx.get_environment(new_name):
                raise NameConflict(f'an environment named "{new_name}" already exists')
            for index, project in enumerate(projects):
                if tx.get_project(project) is None:
                    raise NotFound(
                        f'there is no project "{project}"',
                        [ErrorDetail("no such project", f"$.projects[{index}]")],
                    )
            orders = (e.sort_order for e in tx.list_environments())
            created = Environment(new_name, type, next_sort_order(orders, "$.sortOrder", start=1))
            tx.save_environment(created)
            wanted = set(projects)
            flags = {
                f.name for f in tx.list_flags(archived=None) if not wanted or f.project in wanted
            }
            for state in tx.list_flag_environments(environment=name):
                if state.flag in flags:
                    tx.save_flag_environment(attrs.evolve(state, environment=new_name))
            now_ms = int(self._context.clock().timestamp() * 1000)
            for placement in tx.list_strategies(environment=name):
                if placement.flag in flags:
                    copy = attrs.evolve(placement.strategy, id=new_strategy_id(now_ms))
                    tx.save_strategy(StrategyPlacement(placement.flag, new_name, copy))
            if clone_permissions:
                for role in tx.list_records(ROLES):
                    extra = [
                        attrs.evolve(g, environment=new_name)
                        for g in role.grants
                        if g.environment == name
                    ]
                    if extra:
                        tx.save_record(
                            ROLES, attrs.evolve(role, grants=grants_of([*role.grants, *extra]))
                        )
            self._context.record_event(
                tx,
                "environment-created",
                actor,
                environment=new_name,
                data=EnvironmentCreatedData(type, name, tuple(projects)),
            )
        return created

    def set_environment_enabled(
        self, project: str, flag: str, environment: str, enabled: bool, *, actor: Actor = SYSTEM
    ) -> None:
        """Turn a flag on or off in an environment.

        As in Unleash, turning on a flag that has no active strategy there (none, or only
        disabled ones) adds ``flexibleRollout`` at 100%, so "on" shows as the rule it is.
        """
        name = authorize(actor, "set_environment_enabled", project=project, environment=environment)
        with self._context.unit() as tx:
            refuse_direct_change(tx, actor, project, environment)
            self.set_environment_enabled_in(tx, project, flag, environment, enabled, actor=name)

    def set_environment_enabled_in(
        self,
        tx: StrategyWrite,
        project: str,
        flag: str,
        environment: str,
        enabled: bool,
        *,
        actor: str,
    ) -> None:
        """`set_environment_enabled` inside a unit of work the caller holds (an action set
        switches flags inside its run's transaction)."""
        definition = active_flag(tx, project, flag)
        require_environment(tx, environment)
        state = tx.get_flag_environment(flag, environment) or FlagEnvironment(flag, environment)
        if enabled:
            self._strategies.ensure_active_strategy_in(tx, definition, environment, actor=actor)
        if state.enabled == enabled:
            return
        tx.save_flag_environment(attrs.evolve(state, enabled=enabled))
        kind = "feature-environment-enabled" if enabled else "feature-environment-disabled"
        self._context.record_event(tx, kind, actor, flag=definition, environment=environment)


ENVIRONMENT_TYPES = ("development", "test", "preproduction", "production")
"""Unleash's environment types, which its UI offers; the API takes any short text, as
Unleash's does."""
MAX_TYPE_LENGTH = 100


def check_environment_type(value: object) -> str:
    """A type is required text of at most 100 characters (Unleash's column)."""
    check_text(value, "$.type", optional=False)  # a string from here on
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_TYPE_LENGTH:
        raise InvalidInput(
            f"an environment's type is 1 to {MAX_TYPE_LENGTH} characters",
            [ErrorDetail(f"1 to {MAX_TYPE_LENGTH} characters", "$.type")],
        )
    return value


def _move_environment(tx: _Renaming, old: str, new: str) -> EnvironmentRenamedData:
    """Every row naming environment ``old`` made to name ``new``; how many of each kind
    (for the event). Rows ``new`` still holds from an environment of that name deleted
    before are replaced where they are per-environment state (change request settings,
    the context sample, impact metrics), so nothing of the old one reappears mixed in."""
    states = tx.list_flag_environments(environment=old)
    for state in states:
        tx.save_flag_environment(attrs.evolve(state, environment=new))
        tx.delete_record(FLAG_ENVIRONMENTS, (state.flag, old))
    strategies = tx.list_strategies(environment=old)
    for placement in strategies:
        tx.save_strategy(StrategyPlacement(placement.flag, new, placement.strategy))
    tokens = [t for t in tx.list_tokens() if t.environment == old]
    for token in tokens:
        tx.save_token(attrs.evolve(token, environment=new))
    action_sets = [s for s in tx.list_action_sets() if any(a.environment == old for a in s.actions)]
    for action_set in action_sets:
        actions = tuple(
            attrs.evolve(a, environment=new) if a.environment == old else a
            for a in action_set.actions
        )
        tx.save_action_set(attrs.evolve(action_set, actions=actions))
    roles = [r for r in tx.list_records(ROLES) if any(g.environment == old for g in r.grants)]
    for role in roles:
        grants = (
            attrs.evolve(g, environment=new) if g.environment == old else g for g in role.grants
        )
        tx.save_record(ROLES, attrs.evolve(role, grants=grants_of(grants)))
    for table in (CHANGE_REQUEST_SETTINGS, CONTEXT_SAMPLES, IMPACT_POINTS, IMPACT_SERIES):
        _move_keyed(tx, table, old, new)
    requests = tx.list_records(CHANGE_REQUESTS, {"environment": old})
    for request in requests:
        tx.save_record(CHANGE_REQUESTS, attrs.evolve(request, environment=new))
    plans = tx.list_records(RELEASE_PLANS, {"environment": old})
    for plan in plans:
        tx.save_record(RELEASE_PLANS, attrs.evolve(plan, environment=new))
    integrations = [i for i in tx.list_records(INTEGRATIONS) if old in i.environments]
    for integration in integrations:
        named = dict.fromkeys(new if e == old else e for e in integration.environments)
        tx.save_record(INTEGRATIONS, attrs.evolve(integration, environments=tuple(named)))
    return EnvironmentRenamedData(
        new,
        flags=len(states),
        strategies=len(strategies),
        api_tokens=len(tokens),
        action_sets=len(action_sets),
        roles=len(roles),
        change_requests=len(requests),
        release_plans=len(plans),
        integrations=len(integrations),
        usage=tx.rename_usage_environment(old, new),
    )


def _move_keyed(tx: Records, table: Table[Any], old: str, new: str) -> None:
    """The rows of ``table`` keyed by environment ``old`` moved to ``new``, after what
    ``new`` held there is deleted."""
    for doomed in tx.list_records(table, {"environment": new}):
        tx.delete_record(table, table.key_of(doomed))
    for row in tx.list_records(table, {"environment": old}):
        tx.save_record(table, attrs.evolve(row, environment=new))
        tx.delete_record(table, table.key_of(row))


def _environment(tx: ProjectRepository, name: str) -> Environment:
    environment = tx.get_environment(name)
    if environment is None:
        raise NotFound(f'there is no environment "{name}"')
    return environment


def _users_of(tx: _EnvironmentUsers, name: str) -> list[str]:
    """What names the environment and would break without it, one phrase each."""
    uses = [f'API token "{t.name}"' for t in tx.list_tokens() if t.environment == name]
    uses += [
        f'action set "{s.name}" of project "{s.project}"'
        for s in tx.list_action_sets()
        if any(a.environment == name for a in s.actions)
    ]
    uses += [
        f'role "{r.name}"'
        for r in tx.list_records(ROLES)
        if any(g.environment == name for g in r.grants)
    ]
    return uses
