"""`SqliteSession`: the shared SQL layer's `flagcore_sql.SqlSession` on sqlite3.

It is where ``sqlite3`` errors stop: a broken unique or foreign key becomes
`flagcore.errors.Conflict`, anything else `flagcore.errors.StorageError`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from sqlite_utils import Database

from flagcore.errors import Conflict, StorageError

__all__ = ["SqliteSession"]


class SqliteSession:
    """Statements over the transaction the store has open on ``db``."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def _cursor(self, sql: str, params: Sequence[Any]) -> sqlite3.Cursor:
        try:
            cursor: sqlite3.Cursor = self._db.execute(sql, list(params))
        except sqlite3.IntegrityError as exc:
            raise Conflict(f"the change conflicts with stored data: {exc}") from exc
        except sqlite3.Error as exc:
            raise StorageError(f"the database failed: {exc}") from exc
        return cursor

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        cursor = self._cursor(sql, params)
        cursor.row_factory = sqlite3.Row  # read by column name, in C; no dict per row
        try:
            return cursor.fetchall()  # RETURNING rows can still break a constraint here
        except sqlite3.IntegrityError as exc:
            raise Conflict(f"the change conflicts with stored data: {exc}") from exc
        except sqlite3.Error as exc:
            raise StorageError(f"the database failed: {exc}") from exc

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return int(self._cursor(sql, params).rowcount)
