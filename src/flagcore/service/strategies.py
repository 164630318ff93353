"""Strategies of a flag in an environment, the environment switch, and flag-level variants."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import attrs

from flagcore.collation import locale_compare_key
from flagcore.entities import (
    FlagDefinition,
    FlagEnvironment,
    StrategyDefinition,
    StrategyParameter,
    StrategyPlacement,
)
from flagcore.errors import ErrorDetail, NameConflict, NotFound
from flagcore.model import Strategy, Variant
from flagcore.ports import Transaction
from flagcore.service._base import SYSTEM, ServiceBase
from flagcore.validation import (
    check_name,
    check_strategy,
    check_variants,
    normalise_variant_weights,
)

__all__ = [
    "BUILTIN_DEFINITIONS",
    "StrategiesMixin",
    "new_strategy_id",
    "variants_in_unleash_order",
]

_ULID_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_strategy_id(now_ms: int) -> str:
    """A 26-character ULID, as Unleash gives strategies: sortable by creation time."""
    value = (now_ms << 80) | int.from_bytes(os.urandom(10), "big")
    return "".join(_ULID_ALPHABET[(value >> shift) & 31] for shift in range(125, -1, -5))


BUILTIN_DEFINITIONS: Mapping[str, StrategyDefinition] = {
    d.name: d
    for d in (
        StrategyDefinition("default", "On for everyone.", (), editable=False),
        StrategyDefinition(
            "flexibleRollout",
            "Gradual rollout by a sticky context field.",
            (
                StrategyParameter("rollout", "percentage", required=True),
                StrategyParameter("stickiness", "string"),
                StrategyParameter("groupId", "string"),
            ),
            editable=False,
        ),
        StrategyDefinition(
            "userWithId",
            "On for a list of user ids.",
            (StrategyParameter("userIds", "list"),),
            editable=False,
        ),
        StrategyDefinition(
            "gradualRolloutUserId",
            "Deprecated: use flexibleRollout.",
            (StrategyParameter("percentage", "percentage"), StrategyParameter("groupId")),
            editable=False,
            deprecated=True,
        ),
        StrategyDefinition(
            "gradualRolloutSessionId",
            "Deprecated: use flexibleRollout.",
            (StrategyParameter("percentage", "percentage"), StrategyParameter("groupId")),
            editable=False,
            deprecated=True,
        ),
        StrategyDefinition(
            "gradualRolloutRandom",
            "Deprecated: use flexibleRollout.",
            (StrategyParameter("percentage", "percentage"),),
            editable=False,
            deprecated=True,
        ),
        StrategyDefinition(
            "remoteAddress",
            "On for IP addresses and CIDR ranges.",
            (StrategyParameter("IPs", "list", required=True),),
            editable=False,
        ),
        StrategyDefinition(
            "applicationHostname",
            "On for listed hostnames.",
            (StrategyParameter("hostNames", "list", required=True),),
            editable=False,
        ),
    )
}


class StrategiesMixin(ServiceBase):
    # --- definitions ---
    def list_strategy_definitions(self) -> list[StrategyDefinition]:
        with self._read() as tx:
            return [*BUILTIN_DEFINITIONS.values(), *tx.list_strategy_definitions()]

    def create_strategy_definition(
        self, definition: StrategyDefinition, *, actor: str = SYSTEM
    ) -> StrategyDefinition:
        check_name(definition.name, "strategy")
        with self._unit() as tx:
            if definition.name in BUILTIN_DEFINITIONS or tx.get_strategy_definition(
                definition.name
            ):
                raise NameConflict(f'a strategy named "{definition.name}" already exists')
            tx.save_strategy_definition(definition)
            self._event(tx, "strategy-created", actor, data={"name": definition.name})
        return definition

    # --- strategies on a flag ---
    def list_strategies(self, project: str, flag: str, environment: str) -> list[Strategy]:
        with self._read() as tx:
            self._active_flag(tx, project, flag)
            self._environment(tx, environment)
            return [p.strategy for p in tx.list_strategies(flag=flag, environment=environment)]

    def get_strategy(self, project: str, flag: str, environment: str, strategy_id: str) -> Strategy:
        with self._read() as tx:
            return self._placement(tx, project, flag, environment, strategy_id).strategy

    def add_strategy(
        self, project: str, flag: str, environment: str, strategy: Strategy, *, actor: str = SYSTEM
    ) -> Strategy:
        with self._unit() as tx:
            definition = self._active_flag(tx, project, flag)
            self._environment(tx, environment)
            order = strategy.sort_order
            if order is None:
                order = _next_sort_order(tx.list_strategies(flag=flag, environment=environment))
            stored = self._prepared(tx, definition, strategy, order)
            tx.save_strategy(StrategyPlacement(flag, environment, stored))
            self._event(
                tx,
                "feature-strategy-add",
                actor,
                flag=definition,
                environment=environment,
                data=_strategy_data(stored),
            )
        return stored

    def update_strategy(
        self,
        project: str,
        flag: str,
        environment: str,
        strategy_id: str,
        strategy: Strategy,
        *,
        actor: str = SYSTEM,
    ) -> Strategy:
        with self._unit() as tx:
            before = self._placement(tx, project, flag, environment, strategy_id)
            definition = self._active_flag(tx, project, flag)
            order = strategy.sort_order
            if order is None:
                order = before.strategy.sort_order
            stored = self._prepared(tx, definition, attrs.evolve(strategy, id=strategy_id), order)
            tx.save_strategy(StrategyPlacement(flag, environment, stored))
            self._event(
                tx,
                "feature-strategy-update",
                actor,
                flag=definition,
                environment=environment,
                data=_strategy_data(stored),
                pre_data=_strategy_data(before.strategy),
            )
            self._disable_if_nothing_active(tx, definition, environment, actor)
        return stored

    def delete_strategy(
        self, project: str, flag: str, environment: str, strategy_id: str, *, actor: str = SYSTEM
    ) -> None:
        """Remove a strategy; removing the last active one turns the environment off.

        As in Unleash: an environment that is on with no active strategy would be on for
        everyone, which is never what deleting a rule means.
        """
        with self._unit() as tx:
            before = self._placement(tx, project, flag, environment, strategy_id)
            definition = self._active_flag(tx, project, flag)
            tx.delete_strategy(strategy_id)
            self._event(
                tx,
                "feature-strategy-remove",
                actor,
                flag=definition,
                environment=environment,
                pre_data=_strategy_data(before.strategy),
            )
            self._disable_if_nothing_active(tx, definition, environment, actor)

    def reorder_strategies(
        self,
        project: str,
        flag: str,
        environment: str,
        order: Mapping[str, int],
        *,
        actor: str = SYSTEM,
    ) -> list[Strategy]:
        with self._unit() as tx:
            definition = self._active_flag(tx, project, flag)
            self._environment(tx, environment)
            placements = {p.id: p for p in tx.list_strategies(flag=flag, environment=environment)}
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
            self._event(
                tx,
                "strategy-order-changed",
                actor,
                flag=definition,
                environment=environment,
                data=dict(order),
            )
            return [p.strategy for p in tx.list_strategies(flag=flag, environment=environment)]

    # --- the environment switch and flag-level variants ---
    def set_environment_enabled(
        self, project: str, flag: str, environment: str, enabled: bool, *, actor: str = SYSTEM
    ) -> None:
        """Turn a flag on or off in an environment.

        As in Unleash, turning on a flag that has no active strategy there (none, or only
        disabled ones) adds ``flexibleRollout`` at 100%, so "on" shows as the rule it is.
        """
        with self._unit() as tx:
            self._switch_environment(tx, project, flag, environment, enabled, actor)

    def _switch_environment(
        self, tx: Transaction, project: str, flag: str, environment: str, enabled: bool, actor: str
    ) -> None:
        """`set_environment_enabled` inside a unit of work the caller holds (action sets)."""
        definition = self._active_flag(tx, project, flag)
        self._environment(tx, environment)
        state = tx.get_flag_environment(flag, environment) or FlagEnvironment(flag, environment)
        existing = tx.list_strategies(flag=flag, environment=environment)
        if enabled and all(p.strategy.disabled for p in existing):
            rollout = Strategy(
                "flexibleRollout",
                {"rollout": "100", "stickiness": "default", "groupId": flag},
                id=new_strategy_id(int(self.clock().timestamp() * 1000)),
                sort_order=_next_sort_order(existing),
            )
            tx.save_strategy(StrategyPlacement(flag, environment, rollout))
            self._event(
                tx,
                "feature-strategy-add",
                actor,
                flag=definition,
                environment=environment,
                data=_strategy_data(rollout),
            )
        if state.enabled == enabled:
            return
        tx.save_flag_environment(attrs.evolve(state, enabled=enabled))
        kind = "feature-environment-enabled" if enabled else "feature-environment-disabled"
        self._event(tx, kind, actor, flag=definition, environment=environment)

    def set_flag_variants(
        self,
        project: str,
        flag: str,
        environment: str,
        variants: Sequence[Variant],
        *,
        actor: str = SYSTEM,
    ) -> tuple[Variant, ...]:
        """Replace the flag-level variants in one environment (weights normalised to 1000,
        then put in name order, as for strategy variants)."""
        check_variants(variants, "$")
        normalised = variants_in_unleash_order(tuple(variants))
        with self._unit() as tx:
            definition = self._active_flag(tx, project, flag)
            self._environment(tx, environment)
            state = tx.get_flag_environment(flag, environment) or FlagEnvironment(flag, environment)
            tx.save_flag_environment(attrs.evolve(state, variants=normalised))
            self._event(
                tx,
                "feature-environment-variants-updated",
                actor,
                flag=definition,
                environment=environment,
                data={"variants": [v.name for v in normalised]},
            )
        return normalised

    # --- shared ---
    def _disable_if_nothing_active(
        self, tx: Transaction, flag: FlagDefinition, environment: str, actor: str
    ) -> None:
        """Turn the environment off once no active strategy is left there (Unleash's rule
        after a strategy is deleted or disabled), with the event that says so."""
        remaining = tx.list_strategies(flag=flag.name, environment=environment)
        if any(not placement.strategy.disabled for placement in remaining):
            return
        state = tx.get_flag_environment(flag.name, environment)
        if state is None or not state.enabled:
            return
        tx.save_flag_environment(attrs.evolve(state, enabled=False))
        self._event(
            tx,
            "feature-environment-disabled",
            actor,
            flag=flag,
            environment=environment,
            data={"reason": "no active strategy left"},
        )

    @staticmethod
    def _environment(tx: Transaction, environment: str) -> None:
        if tx.get_environment(environment) is None:
            raise NotFound(f'there is no environment "{environment}"')

    def _placement(
        self, tx: Transaction, project: str, flag: str, environment: str, strategy_id: str
    ) -> StrategyPlacement:
        self._active_flag(tx, project, flag)
        self._environment(tx, environment)
        placement = tx.get_strategy(strategy_id)
        if placement is None or (placement.flag, placement.environment) != (flag, environment):
            raise NotFound(f'there is no strategy "{strategy_id}" on {flag} in {environment}')
        return placement

    def _prepared(
        self, tx: Transaction, flag: FlagDefinition, strategy: Strategy, sort_order: int | None
    ) -> Strategy:
        """Validate, then normalise as Unleash stores strategies."""
        known = {**BUILTIN_DEFINITIONS, **{d.name: d for d in tx.list_strategy_definitions()}}
        check_strategy(strategy, known, self.limits)
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
        strategy_id = strategy.id or new_strategy_id(int(self.clock().timestamp() * 1000))
        return attrs.evolve(
            strategy,
            id=strategy_id,
            parameters=parameters,
            variants=variants,
            segments=tuple(dict.fromkeys(strategy.segments)),
            sort_order=sort_order,
        )


def _next_sort_order(existing: Sequence[StrategyPlacement]) -> int:
    """After the last strategy, as Unleash numbers them (0, 1, 2, ...)."""
    return max((p.strategy.sort_order or 0 for p in existing), default=-1) + 1


def variants_in_unleash_order(variants: tuple[Variant, ...]) -> tuple[Variant, ...]:
    """Weights normalised, then sorted by name as Unleash stores variants.

    SDKs hand out buckets in the stored order, so the order decides which variant a user
    gets. Unleash normalises first (an uneven split's remainder goes to the first variants
    *as sent*), then sorts with JavaScript's ``localeCompare``; both steps are copied here,
    in that order, so a flag defined the same way on both servers gives the same answers.
    """
    normalised = normalise_variant_weights(variants)
    return tuple(sorted(normalised, key=lambda variant: locale_compare_key(variant.name)))


def _strategy_data(strategy: Strategy) -> dict[str, object]:
    return {
        "id": strategy.id,
        "name": strategy.name,
        "parameters": dict(strategy.parameters),
        "constraints": len(strategy.constraints),
        "segments": list(strategy.segments),
        "disabled": strategy.disabled,
    }
