"""`flagcore.ports.StrategyDefinitions`: custom strategy definitions."""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from flagcore.entities import (
    StrategyDefinition,
)
from flagcore.wire import (
    converter,
)
from flagcore_sql import mapping
from flagcore_sql.parts.base import SqlPart

__all__ = ["StrategyDefinitionQueries"]


class StrategyDefinitionQueries(SqlPart):
    """The queries of `flagcore.ports.StrategyDefinitions`."""

    def get_strategy_definition(self, name: str) -> StrategyDefinition | None:
        row = self._one("SELECT body FROM strategy_definitions WHERE name = ?", [name])
        return (
            None
            if row is None
            else converter.structure(orjson.loads(row["body"]), StrategyDefinition)
        )

    def list_strategy_definitions(self) -> Sequence[StrategyDefinition]:
        return [
            converter.structure(orjson.loads(row["body"]), StrategyDefinition)
            for row in self._rows("SELECT body FROM strategy_definitions ORDER BY name")
        ]

    def save_strategy_definition(self, definition: StrategyDefinition) -> None:
        self._run(
            "INSERT INTO strategy_definitions (name, body) VALUES (?, ?) "
            "ON CONFLICT(name) DO UPDATE SET body = excluded.body",
            [definition.name, mapping.dumps(converter.unstructure(definition))],
        )
