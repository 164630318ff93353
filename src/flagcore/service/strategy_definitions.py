"""Strategy definitions: the built-in strategies and the custom ones admins define."""

from __future__ import annotations

from collections.abc import Mapping

from flagcore import ports
from flagcore.entities import StrategyDefinition, StrategyParameter
from flagcore.errors import NameConflict
from flagcore.service.context import SYSTEM, Actor, ServiceContext, authorize
from flagcore.validation import check_name

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
        with self._context.unit() as tx:
            if definition.name in BUILTIN_DEFINITIONS or tx.get_strategy_definition(
                definition.name
            ):
                raise NameConflict(f'a strategy named "{definition.name}" already exists')
            tx.save_strategy_definition(definition)
            self._context.record_event(
                tx, "strategy-created", actor, data={"name": definition.name}
            )
        return definition

    @staticmethod
    def known_in(tx: ports.StrategyDefinitions) -> dict[str, StrategyDefinition]:
        """Every strategy a flag may use, by name: the built-in ones and the custom ones."""
        return {**BUILTIN_DEFINITIONS, **{d.name: d for d in tx.list_strategy_definitions()}}
