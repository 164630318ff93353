"""`flagcore.ports.Records`: the generic keyed repository, in SQL.

Every statement comes from the table's `flagcore_sql.entity_tables.EntityTable` (in
`flagcore_sql.tables.ROWS`); deletes leave the rows that go with a row to the schema's
``ON DELETE CASCADE``, and unique groups to its unique indexes (a violation is the
session's `flagcore.errors.Conflict`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from flagcore.tables import Table
from flagcore_sql.parts.base import SqlPart
from flagcore_sql.tables import rows_of

__all__ = ["RecordQueries"]

_E = TypeVar("_E")


class RecordQueries(SqlPart):
    """The five methods of `flagcore.ports.Records` over `flagcore_sql.tables.ROWS`."""

    def get_record(self, table: Table[_E], key: Any) -> _E | None:
        rows = rows_of(table)
        row = self._one(rows.by_key, rows.key_params(key))
        return None if row is None else rows.from_row(row)

    def list_records(
        self,
        table: Table[_E],
        where: Mapping[str, Any] | None = None,
        *,
        limit: int | None = None,
        offset: int = 0,
    ) -> Sequence[_E]:
        rows = rows_of(table)
        sql, params = rows.select(where)
        if limit is not None:
            sql, params = f"{sql} LIMIT ? OFFSET ?", [*params, limit, offset]
        elif offset:
            raise ValueError("an offset needs a limit")
        return [rows.from_row(row) for row in self._rows(sql, params)]

    def save_record(self, table: Table[_E], entity: _E) -> None:
        rows = rows_of(table)
        self._run(rows.upsert, rows.values(entity))

    def delete_record(self, table: Table[_E], key: Any) -> None:
        rows = rows_of(table)
        self._run(rows.delete, rows.key_params(key))

    def create_record(self, table: Table[_E], entity: _E) -> _E:
        rows = rows_of(table)
        return table.with_key(entity, self._insert(rows.insert, rows.fresh_values(entity)))
