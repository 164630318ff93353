"""`PostgresSession`: the shared SQL layer's `flagcore_sql.SqlSession` on psycopg 3.

It is where psycopg errors stop: a broken unique or foreign key becomes
`flagcore.errors.Conflict`; a lost connection becomes `DatabaseUnavailable` (a
`flagcore.errors.StorageError`, answered 503); anything else `StorageError`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import psycopg

from flagcore.errors import Conflict, FlagcoreError, StorageError

__all__ = ["DatabaseUnavailable", "PostgresSession", "row_factory", "translate"]


class DatabaseUnavailable(StorageError):
    """PostgreSQL cannot be reached (down, restarting, network lost); nothing was written."""


def translate(exc: psycopg.Error, connection: psycopg.Connection[Any] | None) -> FlagcoreError:
    """The `flagcore.errors` exception a psycopg error means; messages carry no secret."""
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, psycopg.errors.IntegrityError):
        return Conflict(f"the change conflicts with stored data: {first_line}")
    if isinstance(exc, psycopg.OperationalError) and (
        connection is None or connection.broken or connection.closed
    ):
        return DatabaseUnavailable(f"the database is unavailable: {first_line}")
    if isinstance(exc, psycopg.errors.AdminShutdown | psycopg.errors.CannotConnectNow):
        return DatabaseUnavailable(f"the database is unavailable: {first_line}")
    return StorageError(f"the database failed: {first_line}")


@functools.lru_cache(maxsize=512)
def _row_class(names: tuple[str, ...]) -> type[tuple[Any, ...]]:
    """A tuple readable by column name too, as ``sqlite3.Row`` is (what flagcore_sql expects)."""
    index = {name: position for position, name in enumerate(names)}
    get = tuple.__getitem__

    class Row(tuple[Any, ...]):
        __slots__ = ()

        def __getitem__(self, key: Any) -> Any:
            if type(key) is str:
                return get(self, index[key])
            return get(self, key)

        def keys(self) -> list[str]:
            return list(names)

    return Row


def row_factory(cursor: Any) -> Callable[[Sequence[Any]], Any]:
    """psycopg row factory: rows read by name (``row["id"]``) and unpacked by position."""
    description = cursor.description
    if description is None:
        return tuple
    return _row_class(tuple(column.name for column in description))


class PostgresSession:
    """Statements over the transaction the store has open on ``connection``."""

    def __init__(self, connection: psycopg.Connection[Any]) -> None:
        self._connection = connection

    def _execute(self, sql: str, params: Sequence[Any]) -> psycopg.Cursor[Any]:
        try:
            return self._connection.execute(sql, list(params) if params else None)
        except psycopg.Error as exc:
            raise translate(exc, self._connection) from exc

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        cursor = self._execute(sql, params)
        try:
            return cursor.fetchall() if cursor.description is not None else []
        except psycopg.Error as exc:
            raise translate(exc, self._connection) from exc

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return int(self._execute(sql, params).rowcount)
