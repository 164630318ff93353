"""Strategy definitions: the built-in strategies and the custom ones admins define."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from flagcore import ports
from flagcore.entities import StrategyDefinition, StrategyParameter
from flagcore.errors import Conflict, ErrorDetail, InvalidInput, NameConflict, NotFound
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.tables import STRATEGY_DEFINITIONS
from flagcore.validation import check_name
from flagcore.wire.event_data import NameData, StrategyDefinitionData

__all__ = ["BUILTIN_DEFINITIONS", "StrategyDefinitions"]

BUILTIN_DEFINITIONS: Mapping[str, StrategyDefinition] = {
    d.name: d
    for d in (
        StrategyDefinition("default", "On for everyone.", (), editable=False),
        StrategyDefinition(
            "flexibleRollout",
            "Gradual rollout by a sticky context field.",
            (
                # Unleash marks stickiness and groupId required (and rollout not, though its
                # editor always sends one); flagcore requires all three: a blank rollout is
                # an error in the UI, never a silent 100 (docs/ui.md).
                StrategyParameter("rollout", "percentage", required=True),
                StrategyParameter("stickiness", "string", required=True),
                StrategyParameter("groupId", "string", required=True),
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
            (
                StrategyParameter("percentage", "percentage"),
                StrategyParameter("groupId", required=True),
            ),
            editable=False,
            deprecated=True,
        ),
        StrategyDefinition(
            "gradualRolloutSessionId",
            "Deprecated: use flexibleRollout.",
            (
                StrategyParameter("percentage", "percentage"),
                StrategyParameter("groupId", required=True),
            ),
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


class StrategyDefinitions:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def list_strategy_definitions(self) -> list[StrategyDefinition]:
        with self._context.read() as tx:
            return [*BUILTIN_DEFINITIONS.values(), *tx.list_strategy_definitions()]

    def create_strategy_definition(
        self, definition: StrategyDefinition, *, actor: Actor = SYSTEM
    ) -> StrategyDefinition:
        actor = authorize(actor, "create_strategy_definition")
        check_name(definition.name, "strategy")
        _check_parameters(definition)
        with self._context.unit() as tx:
            if definition.name in BUILTIN_DEFINITIONS or tx.get_strategy_definition(
                definition.name
            ):
                raise NameConflict(f'a strategy named "{definition.name}" already exists')
            tx.save_strategy_definition(definition)
            self._context.record_event(
                tx, "strategy-created", actor, data=StrategyDefinitionData.of(definition)
            )
        return definition

    def get_strategy_definition(self, name: str) -> StrategyDefinition:
        with self._context.read() as tx:
            return BUILTIN_DEFINITIONS.get(name) or _custom(tx, name)

    def update_strategy_definition(
        self, definition: StrategyDefinition, *, actor: Actor = SYSTEM
    ) -> StrategyDefinition:
        """Replace a custom strategy's title, description and parameters (Unleash's
        ``PUT``); its deprecation stays. Built-in strategies cannot be edited."""
        actor = authorize(actor, "update_strategy_definition")
        _check_parameters(definition)
        with self._context.unit() as tx:
            before = _editable(tx, definition.name)
            updated = attrs.evolve(definition, editable=True, deprecated=before.deprecated)
            tx.save_strategy_definition(updated)
            self._context.record_event(
                tx,
                "strategy-updated",
                actor,
                data=StrategyDefinitionData.of(updated),
                pre_data=StrategyDefinitionData.of(before),
            )
        return updated

    def deprecate_strategy_definition(self, name: str, *, actor: Actor = SYSTEM) -> None:
        """Mark a custom strategy deprecated: flags keep it, editors stop offering it."""
        self._set_deprecated(name, True, "deprecate_strategy_definition", actor)

    def reactivate_strategy_definition(self, name: str, *, actor: Actor = SYSTEM) -> None:
        self._set_deprecated(name, False, "reactivate_strategy_definition", actor)

    def _set_deprecated(self, name: str, deprecated: bool, operation: str, actor: Actor) -> None:
        actor = authorize(actor, operation)
        with self._context.unit() as tx:
            before = _editable(tx, name)
            tx.save_strategy_definition(attrs.evolve(before, deprecated=deprecated))
            kind = "strategy-deprecated" if deprecated else "strategy-reactivated"
            self._context.record_event(tx, kind, actor, data=NameData(name))

    def delete_strategy_definition(self, name: str, *, actor: Actor = SYSTEM) -> None:
        """Delete a custom strategy no flag uses (archived flags included: reviving one
        would bring back a strategy nothing defines); each user is named when refused."""
        actor = authorize(actor, "delete_strategy_definition")
        with self._context.unit() as tx:
            before = _editable(tx, name)
            users = [
                f'flag "{p.flag}" in environment "{p.environment}" (strategy {p.strategy.id})'
                for p in tx.list_strategies()
                if p.strategy.name == name
            ]
            if users:
                raise Conflict(
                    f'strategy "{name}" is used by {len(users)} flag strategy(ies); '
                    "remove them first",
                    [ErrorDetail(user) for user in users[:20]],
                )
            tx.delete_record(STRATEGY_DEFINITIONS, name)
            self._context.record_event(
                tx,
                "strategy-deleted",
                actor,
                data=NameData(name),
                pre_data=StrategyDefinitionData.of(before),
            )

    @staticmethod
    def known_in(tx: ports.StrategyDefinitions) -> dict[str, StrategyDefinition]:
        """Every strategy a flag may use, by name: the built-in ones and the custom ones."""
        return {**BUILTIN_DEFINITIONS, **{d.name: d for d in tx.list_strategy_definitions()}}


def _check_parameters(definition: StrategyDefinition) -> None:
    """Each parameter has a name, once: a strategy's parameters are keyed by it."""
    details = []
    seen: set[str] = set()
    for index, parameter in enumerate(definition.parameters):
        name = parameter.name.strip()
        if not name:
            details.append(ErrorDetail("a parameter needs a name", f"$.parameters[{index}].name"))
        elif name in seen:
            details.append(ErrorDetail(f'"{name}" is named twice', f"$.parameters[{index}].name"))
        seen.add(name)
    if details:
        raise InvalidInput("each parameter needs a name of its own", details)


def _custom(tx: ports.StrategyDefinitions, name: str) -> StrategyDefinition:
    found = tx.get_strategy_definition(name)
    if found is None:
        raise NotFound(f'there is no strategy "{name}"')
    return found


def _editable(tx: ports.StrategyDefinitions, name: str) -> StrategyDefinition:
    """A custom strategy, or `Conflict` for a built-in one (Unleash: not editable)."""
    if name in BUILTIN_DEFINITIONS:
        raise Conflict(
            f'"{name}" is a built-in strategy: it cannot be changed or deleted',
            [ErrorDetail(f'built-in strategy "{name}"', "$.name")],
        )
    return _custom(tx, name)
