"""`flagcore.ports.StrategyRepository`: strategies and their segment links."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from flagcore.entities import (
    StrategyPlacement,
)
from flagcore.model import Constraint, Strategy, Variant
from flagcore.wire import (
    converter,
    structure_constraints,
    structure_variants,
)
from flagcore_sql import mapping
from flagcore_sql.parts.base import SqlPart

__all__ = ["StrategyQueries"]


class StrategyQueries(SqlPart):
    """The queries of `flagcore.ports.StrategyRepository`."""

    def _placements(self, where: str, params: Sequence[Any]) -> list[StrategyPlacement]:
        rows = self._rows(
            "SELECT id, flag, environment, name, parameters, constraints, variants, disabled, "
            f"title, sort_order FROM strategies s WHERE {where} "
            "ORDER BY flag, environment, sort_order, id",
            params,
        )
        # One query for every segment reference, not one subquery per strategy.
        segment_rows = self._rows(
            "SELECT strategy_id, segment_id FROM strategy_segments WHERE strategy_id IN "
            f"(SELECT id FROM strategies s WHERE {where}) ORDER BY strategy_id, position",
            params,
        )
        segments: dict[str, list[int]] = {}
        for strategy_id, segment_id in segment_rows:
            segments.setdefault(strategy_id, []).append(segment_id)
        loads = orjson.loads
        return [
            StrategyPlacement(
                flag,
                environment,
                Strategy(
                    name,
                    loads(parameters),
                    structure_constraints(mapping.loads_list(constraints)),
                    tuple(segments[strategy_id]) if strategy_id in segments else (),
                    structure_variants(mapping.loads_list(variants)),
                    bool(disabled),
                    strategy_id,
                    title,
                    sort_order,
                ),
            )
            for (
                strategy_id,
                flag,
                environment,
                name,
                parameters,
                constraints,
                variants,
                disabled,
                title,
                sort_order,
            ) in rows
        ]

    def get_strategy(self, strategy_id: str) -> StrategyPlacement | None:
        found = self._placements("s.id = ?", [strategy_id])
        return found[0] if found else None

    def list_strategies(
        self, *, flag: str | None = None, environment: str | None = None
    ) -> Sequence[StrategyPlacement]:
        where_sql, params = mapping.where({"s.flag = ?": flag, "s.environment = ?": environment})
        return self._placements(where_sql, params)

    def save_strategy(self, placement: StrategyPlacement) -> None:
        strategy = placement.strategy
        self._run(
            "INSERT INTO strategies (id, flag, environment, name, parameters, constraints, "
            "variants, disabled, title, sort_order) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET flag = excluded.flag, "
            "environment = excluded.environment, name = excluded.name, "
            "parameters = excluded.parameters, constraints = excluded.constraints, "
            "variants = excluded.variants, disabled = excluded.disabled, title = excluded.title, "
            "sort_order = excluded.sort_order",
            [
                placement.id,
                placement.flag,
                placement.environment,
                strategy.name,
                mapping.dumps(dict(strategy.parameters)),
                mapping.dumps(converter.unstructure(strategy.constraints, tuple[Constraint, ...])),
                mapping.dumps(converter.unstructure(strategy.variants, tuple[Variant, ...])),
                strategy.disabled,
                strategy.title,
                strategy.sort_order or 0,
            ],
        )
        self._run("DELETE FROM strategy_segments WHERE strategy_id = ?", [placement.id])
        for position, segment_id in enumerate(strategy.segments):
            self._run(
                "INSERT INTO strategy_segments (strategy_id, segment_id, position) "
                "VALUES (?, ?, ?)",
                [placement.id, segment_id, position],
            )

    def delete_strategy(self, strategy_id: str) -> None:
        self._run("DELETE FROM strategies WHERE id = ?", [strategy_id])

    def strategies_using_segment(self, segment_id: int) -> Sequence[StrategyPlacement]:
        return self._placements(
            "s.id IN (SELECT strategy_id FROM strategy_segments WHERE segment_id = ?)", [segment_id]
        )
