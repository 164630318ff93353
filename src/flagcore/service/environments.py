"""Environments, and turning a flag on or off in one (Unleash's environment switch)."""

from __future__ import annotations

import attrs

from flagcore.entities import Environment, FlagEnvironment
from flagcore.errors import NameConflict
from flagcore.ports import Transaction
from flagcore.service.change_request_gate import refuse_direct_change
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.lookups import active_flag, require_environment
from flagcore.service.strategies import Strategies
from flagcore.validation import check_name, check_sort_order, next_sort_order

__all__ = ["Environments"]


class Environments:
    """Environments and the per-flag switch; turning a flag on asks `Strategies` for an
    active strategy there (Unleash's implicit full rollout)."""

    def __init__(self, context: ServiceContext, *, strategies: Strategies) -> None:
        self._context = context
        self._strategies = strategies

    def list_environments(self) -> list[Environment]:
        with self._context.read() as tx:
            return list(tx.list_environments())

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
            environment = Environment(name, type, order)
            tx.save_environment(environment)
            self._context.record_event(
                tx, "environment-created", actor, environment=name, data={"type": type}
            )
        return environment

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
        tx: Transaction,
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
