"""Strategies of a flag in an environment: add, read, update, delete, reorder."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import attrs

from flagcore.entities import FlagDefinition, StrategyPlacement
from flagcore.errors import ErrorDetail, InvalidInput, NotFound
from flagcore.model import Strategy
from flagcore.ports import RulesWrite, StrategyChecks, StrategyWrite
from flagcore.service.change_request_gate import refuse_direct_change
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.service.lookups import active_flag, require_environment
from flagcore.service.segments import segments_in_attachment_order
from flagcore.service.strategy_definitions import StrategyDefinitions
from flagcore.service.variants import variants_in_unleash_order
from flagcore.validation import check_sort_order, check_strategy, next_sort_order
from flagcore.wire.event_data import StrategyData, StrategyOrderData, SwitchedOffData

__all__ = ["Strategies", "new_strategy_id"]

_ULID_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_strategy_id(now_ms: int) -> str:
    """A 26-character ULID, as Unleash gives strategies: sortable by creation time."""
    value = (now_ms << 80) | int.from_bytes(os.urandom(10), "big")
    return "".join(_ULID_ALPHABET[(value >> shift) & 31] for shift in range(125, -1, -5))


class Strategies:
    """The strategies of a flag in an environment; a strategy's name must be one of
    `StrategyDefinitions`."""

    def __init__(self, context: ServiceContext, *, definitions: StrategyDefinitions) -> None:
        self._context = context
        self._definitions = definitions

    def list_strategies(self, project: str, flag: str, environment: str) -> list[Strategy]:
        with self._context.read() as tx:
            active_flag(tx, project, flag)
            require_environment(tx, environment)
            return [p.strategy for p in tx.list_strategies(flag=flag, environment=environment)]

    def get_strategy(self, project: str, flag: str, environment: str, strategy_id: str) -> Strategy:
        with self._context.read() as tx:
            return self._placement(tx, project, flag, environment, strategy_id).strategy

    def add_strategy(
        self,
        project: str,
        flag: str,
        environment: str,
        strategy: Strategy,
        *,
        actor: Actor = SYSTEM,
    ) -> Strategy:
        name = authorize(actor, "add_strategy", project=project, environment=environment)
        with self._context.unit() as tx:
            refuse_direct_change(tx, actor, project, environment)
            return self.add_strategy_in(tx, project, flag, environment, strategy, actor=name)

    def add_strategy_in(
        self,
        tx: RulesWrite,
        project: str,
        flag: str,
        environment: str,
        strategy: Strategy,
        *,
        actor: str,
    ) -> Strategy:
        """`add_strategy` inside the caller's unit of work (a change request applied)."""
        definition = active_flag(tx, project, flag)
        require_environment(tx, environment)
        order = strategy.sort_order
        if order is None:
            order = _next_sort_order(tx.list_strategies(flag=flag, environment=environment))
        stored = self._prepared(tx, definition, strategy, order)
        tx.save_strategy(StrategyPlacement(flag, environment, stored))
        self._context.record_event(
            tx,
            "feature-strategy-add",
            actor,
            flag=definition,
            environment=environment,
            data=StrategyData.of(stored),
        )
        return stored

    def copy_strategies(
        self,
        project: str,
        flag: str,
        source: str,
        target: str,
        *,
        actor: Actor = SYSTEM,
    ) -> list[Strategy]:
        """Every strategy of ``source`` added to ``target`` after those there, in one unit
        of work: Unleash's UI copies them one ``POST`` each, which can stop halfway. Each
        copy gets a new id and writes the event `add_strategy` writes; the switch in
        ``target`` is left as it is."""
        name = authorize(actor, "copy_strategies", project=project, environment=target)
        with self._context.unit() as tx:
            definition = active_flag(tx, project, flag)
            require_environment(tx, source)
            require_environment(tx, target)
            refuse_direct_change(tx, actor, project, target)  # strategies added there
            if source == target:
                raise InvalidInput(
                    "copy the strategies to another environment",
                    [ErrorDetail("the same environment as the source", "$.environment")],
                )
            copied = []
            for placement in tx.list_strategies(flag=flag, environment=source):
                placed = tx.list_strategies(flag=flag, environment=target)
                fresh = attrs.evolve(placement.strategy, id=None)
                stored = self._prepared(tx, definition, fresh, _next_sort_order(placed))
                tx.save_strategy(StrategyPlacement(flag, target, stored))
                self._context.record_event(
                    tx,
                    "feature-strategy-add",
                    name,
                    flag=definition,
                    environment=target,
                    data=StrategyData.of(stored),
                )
                copied.append(stored)
        return copied

    def update_strategy(
        self,
        project: str,
        flag: str,
        environment: str,
        strategy_id: str,
        strategy: Strategy,
        *,
        keep_segments: bool = False,
        actor: Actor = SYSTEM,
    ) -> Strategy:
        """Replace a strategy; with ``keep_segments`` (a body that names no segments) its
        segments stay as they are, as Unleash's update touches them only when given."""
        name = authorize(actor, "update_strategy", project=project, environment=environment)
        with self._context.unit() as tx:
            refuse_direct_change(tx, actor, project, environment)
            return self.update_strategy_in(
                tx,
                project,
                flag,
                environment,
                strategy_id,
                strategy,
                keep_segments=keep_segments,
                actor=name,
            )

    def update_strategy_in(
        self,
        tx: RulesWrite,
        project: str,
        flag: str,
        environment: str,
        strategy_id: str,
        strategy: Strategy,
        *,
        keep_segments: bool = False,
        actor: str,
    ) -> Strategy:
        """`update_strategy` inside the caller's unit of work."""
        before = self._placement(tx, project, flag, environment, strategy_id)
        definition = active_flag(tx, project, flag)
        if keep_segments:
            strategy = attrs.evolve(strategy, segments=before.strategy.segments)
        order = strategy.sort_order
        if order is None:
            order = before.strategy.sort_order
        stored = self._prepared(
            tx,
            definition,
            attrs.evolve(strategy, id=strategy_id),
            order,
            attached=before.strategy.segments,
        )
        tx.save_strategy(StrategyPlacement(flag, environment, stored))
        self._context.record_event(
            tx,
            "feature-strategy-update",
            actor,
            flag=definition,
            environment=environment,
            data=StrategyData.of(stored),
            pre_data=StrategyData.of(before.strategy),
        )
        self._disable_if_nothing_active(tx, definition, environment, actor)
        return stored

    def delete_strategy(
        self, project: str, flag: str, environment: str, strategy_id: str, *, actor: Actor = SYSTEM
    ) -> None:
        """Remove a strategy; removing the last active one turns the environment off.

        As in Unleash: an environment that is on with no active strategy would be on for
        everyone, which is never what deleting a rule means.
        """
        name = authorize(actor, "delete_strategy", project=project, environment=environment)
        with self._context.unit() as tx:
            refuse_direct_change(tx, actor, project, environment)
            self.delete_strategy_in(tx, project, flag, environment, strategy_id, actor=name)

    def delete_strategy_in(
        self,
        tx: StrategyWrite,
        project: str,
        flag: str,
        environment: str,
        strategy_id: str,
        *,
        actor: str,
    ) -> None:
        """`delete_strategy` inside the caller's unit of work."""
        before = self._placement(tx, project, flag, environment, strategy_id)
        definition = active_flag(tx, project, flag)
        tx.delete_strategy(strategy_id)
        self._context.record_event(
            tx,
            "feature-strategy-remove",
            actor,
            flag=definition,
            environment=environment,
            pre_data=StrategyData.of(before.strategy),
        )
        self._disable_if_nothing_active(tx, definition, environment, actor)

    def reorder_strategies(
        self,
        project: str,
        flag: str,
        environment: str,
        order: Mapping[str, int],
        *,
        actor: Actor = SYSTEM,
    ) -> list[Strategy]:
        name = authorize(actor, "reorder_strategies", project=project, environment=environment)
        with self._context.unit() as tx:
            refuse_direct_change(tx, actor, project, environment)
            return self.reorder_strategies_in(tx, project, flag, environment, order, actor=name)

    def reorder_strategies_in(
        self,
        tx: StrategyWrite,
        project: str,
        flag: str,
        environment: str,
        order: Mapping[str, int],
        *,
        actor: str,
    ) -> list[Strategy]:
        """`reorder_strategies` inside the caller's unit of work."""
        definition = active_flag(tx, project, flag)
        require_environment(tx, environment)
        placements = {p.id: p for p in tx.list_strategies(flag=flag, environment=environment)}
        for index, sort_order in enumerate(order.values()):
            check_sort_order(sort_order, f"$[{index}].sortOrder")
        unknown = [strategy_id for strategy_id in order if strategy_id not in placements]
        if unknown:
            raise NotFound(
                f"no strategy {unknown[0]!r} on {flag} in {environment}",
                [ErrorDetail(f"unknown strategy id {i!r}") for i in unknown],
            )
        for strategy_id, sort_order in order.items():
            placement = placements[strategy_id]
            tx.save_strategy(
                attrs.evolve(
                    placement, strategy=attrs.evolve(placement.strategy, sort_order=sort_order)
                )
            )
        self._context.record_event(
            tx,
            "strategy-order-changed",
            actor,
            flag=definition,
            environment=environment,
            data=StrategyOrderData(order),
        )
        return [p.strategy for p in tx.list_strategies(flag=flag, environment=environment)]

    def ensure_active_strategy_in(
        self, tx: StrategyWrite, flag: FlagDefinition, environment: str, *, actor: str
    ) -> None:
        """Add ``flexibleRollout`` at 100% unless the flag has an active strategy in
        ``environment``: Unleash's rule when a flag is turned on there, so "on" shows as the
        rule it is. Runs in the caller's unit of work (`Environments` switching a flag on).
        """
        existing = tx.list_strategies(flag=flag.name, environment=environment)
        if not all(p.strategy.disabled for p in existing):
            return
        rollout = Strategy(
            "flexibleRollout",
            {"rollout": "100", "stickiness": "default", "groupId": flag.name},
            id=new_strategy_id(int(self._context.clock().timestamp() * 1000)),
            sort_order=_next_sort_order(existing),
        )
        tx.save_strategy(StrategyPlacement(flag.name, environment, rollout))
        self._context.record_event(
            tx,
            "feature-strategy-add",
            actor,
            flag=flag,
            environment=environment,
            data=StrategyData.of(rollout),
        )

    # --- for the importer (flagcore.service.importing) ---
    def prepared_in(
        self, tx: StrategyChecks, flag: FlagDefinition, strategy: Strategy, sort_order: int | None
    ) -> Strategy:
        """``strategy`` checked and normalised exactly as `add_strategy` stores it, for a
        part that places strategies inside its own unit of work (an import)."""
        return self._prepared(tx, flag, strategy, sort_order)

    def _disable_if_nothing_active(
        self, tx: StrategyWrite, flag: FlagDefinition, environment: str, actor: str
    ) -> None:
        """Turn the environment off once no active strategy is left there (Unleash's rule
        after a strategy is deleted or disabled), with the event that says so.

        Written here rather than through `Environments`, which depends on this part: the
        parts form no cycle, and switching off needs none of the switch's other rules.
        """
        remaining = tx.list_strategies(flag=flag.name, environment=environment)
        if any(not placement.strategy.disabled for placement in remaining):
            return
        state = tx.get_flag_environment(flag.name, environment)
        if state is None or not state.enabled:
            return
        tx.save_flag_environment(attrs.evolve(state, enabled=False))
        self._context.record_event(
            tx,
            "feature-environment-disabled",
            actor,
            flag=flag,
            environment=environment,
            data=SwitchedOffData("no active strategy left"),
        )

    def _placement(
        self, tx: StrategyWrite, project: str, flag: str, environment: str, strategy_id: str
    ) -> StrategyPlacement:
        active_flag(tx, project, flag)
        require_environment(tx, environment)
        placement = tx.get_strategy(strategy_id)
        if placement is None or (placement.flag, placement.environment) != (flag, environment):
            raise NotFound(f'there is no strategy "{strategy_id}" on {flag} in {environment}')
        return placement

    def _prepared(
        self,
        tx: StrategyChecks,
        flag: FlagDefinition,
        strategy: Strategy,
        sort_order: int | None,
        *,
        attached: Sequence[int] = (),
    ) -> Strategy:
        """Validate, then normalise as Unleash stores strategies (segments in the order
        they were attached: those of ``attached`` the strategy keeps first)."""
        known = self._definitions.known_in(tx)
        check_strategy(strategy, known, self._context.limits)
        for index, segment_id in enumerate(strategy.segments):
            if tx.get_segment(segment_id) is None:
                raise NotFound(
                    f"there is no segment with id {segment_id}",
                    [ErrorDetail("unknown segment", f"$.segments[{index}]")],
                )
        parameters = dict(strategy.parameters)
        if strategy.name == "flexibleRollout":
            parameters.setdefault("groupId", flag.name)
            parameters.setdefault("stickiness", "default")
            parameters.setdefault("rollout", "100")
        variants = variants_in_unleash_order(strategy.variants)
        strategy_id = strategy.id or new_strategy_id(int(self._context.clock().timestamp() * 1000))
        return attrs.evolve(
            strategy,
            id=strategy_id,
            parameters=parameters,
            variants=variants,
            segments=segments_in_attachment_order(attached, strategy.segments),
            sort_order=sort_order,
        )


def _next_sort_order(existing: Sequence[StrategyPlacement]) -> int:
    """After the last strategy, as Unleash numbers them (0, 1, 2, ...)."""
    return next_sort_order((p.strategy.sort_order or 0 for p in existing), "$.sortOrder")
