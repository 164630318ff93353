"""How each entity of `flagcore.tables` is kept in SQL: one `EntityTable` per table.

Columns follow the entity's fields (see `flagcore_sql.entity_tables`), so a table new in
`flagcore.tables.TABLES` is kept with no line here; only a column spelled or read
differently is named. Strategies (their segment links are a table
of their own) and action sets with their runs (kept as JSON bodies in their own shape
since m004) have their own queries in `flagcore_sql.parts`.
"""

from __future__ import annotations

import typing
from typing import Any, TypeVar

from flagcore import tables
from flagcore.change_requests import Change, Comment, Review
from flagcore.model import Constraint, Dependency, Segment, Variant
from flagcore.release_plans import Milestone, Safeguard
from flagcore.wire import (
    converter,
    structure_constraints,
    structure_dependencies,
    structure_variants,
)
from flagcore_sql import mapping
from flagcore_sql.entity_tables import Column, EntityTable, free_json, nested_json

__all__ = ["ROWS", "rows_of"]

_E = TypeVar("_E")


def _rules(attribute: str, kind: Any, read: Any) -> Column:
    """A JSON list of rules, read back through the wire's own reader (as the client
    snapshots read them), so a stored rule is normalised the one way."""
    return Column(
        attribute,
        attribute.rsplit(".", 1)[-1],
        lambda value: mapping.dumps(converter.unstructure(value, kind)),
        lambda text: read(mapping.loads_list(text)),
    )


_SPELLED: dict[str, EntityTable[Any]] = {
    row.name: row
    for row in (
        EntityTable(tables.PROJECTS, kept=("created_at",)),
        # Flags keep one column per field of `FlagDefinition` (a new plain field needs
        # only its migration).
        EntityTable(
            tables.FLAGS,
            kept=("created_at",),
            columns={
                "dependencies": _rules(
                    "dependencies", tuple[Dependency, ...], structure_dependencies
                )
            },
        ),
        EntityTable(
            tables.FLAG_ENVIRONMENTS,
            columns={"variants": _rules("variants", tuple[Variant, ...], structure_variants)},
        ),
        EntityTable(
            tables.SEGMENTS,
            flatten={"segment": Segment},
            columns={
                "segment.constraints": _rules(
                    "segment.constraints", tuple[Constraint, ...], structure_constraints
                )
            },
        ),
        # Tokens made before m005 have no id: they read as "" (the service gives one).
        EntityTable(
            tables.API_TOKENS,
            columns={"id": Column("id", "id", lambda value: value, lambda value: value or "")},
        ),
        EntityTable(tables.SIGNAL_ENDPOINTS, kept=("created_at",)),
        EntityTable(tables.STRATEGY_DEFINITIONS, document="body"),
        EntityTable(tables.CONTEXT_FIELDS, document="body"),
        EntityTable(tables.CODE_SCANS, document="body"),
        EntityTable(
            tables.SIGNALS, columns={"payload": free_json("payload", "payload", null=False)}
        ),
        EntityTable(
            tables.CHANGE_REQUESTS,
            columns={
                "changes": nested_json("changes", tuple[Change, ...]),
                "approvals": nested_json("approvals", tuple[Review, ...]),
                "rejections": nested_json("rejections", tuple[Review, ...]),
                "comments": nested_json("comments", tuple[Comment, ...]),
            },
        ),
        EntityTable(tables.RELEASE_PLAN_TEMPLATES, document="body"),
        EntityTable(
            tables.RELEASE_PLANS,
            columns={
                "milestones": nested_json("milestones", tuple[Milestone, ...]),
                "placed_strategy_ids": nested_json("placed_strategy_ids", tuple[str, ...]),
                "safeguards": nested_json("safeguards", tuple[Safeguard, ...]),
            },
        ),
        EntityTable(
            tables.IMPACT_POINTS, columns={"buckets": nested_json("buckets", dict[str, int])}
        ),
        EntityTable(
            tables.EVENTS,
            columns={
                "data": free_json("data", "data", null=True),
                "pre_data": free_json("pre_data", "pre_data", null=True),
            },
        ),
    )
}
"""The tables whose columns are spelled or kept differently from their entity's fields."""

_OWN_QUERIES = frozenset({"strategies", "action_sets", "action_set_events"})
"""Tables `flagcore_sql.parts` keeps with queries of their own (see the module's docstring)."""

ROWS: dict[str, EntityTable[Any]] = {
    table.name: _SPELLED.get(table.name) or EntityTable(table)
    for table in tables.TABLES
    if table.name not in _OWN_QUERIES
}
"""The `EntityTable` of each table kept generically, by table name."""


def rows_of(table: tables.Table[_E]) -> EntityTable[_E]:
    """The `EntityTable` of ``table``, typed as its entity."""
    return typing.cast(EntityTable[_E], ROWS[table.name])
