"""`SqlPart`: what every group of queries shares: the session, the dialect, the plumbing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flagcore_sql.dialect import Dialect
from flagcore_sql.session import Row, SqlSession

__all__ = ["IN_CHUNK", "SqlPart"]

IN_CHUNK = 500
"""Values per ``IN (...)`` list: under SQLite's 32,766 parameters and PostgreSQL's 65,535."""


class SqlPart:
    """Statements over ``session`` after `Dialect.sql`; ids come back by ``RETURNING id``."""

    def __init__(self, session: SqlSession, dialect: Dialect) -> None:
        self._session = session
        self._dialect = dialect
        self._sql = dialect.sql

    def _rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        return self._session.rows(self._sql(sql), params)

    def _run(self, sql: str, params: Sequence[Any] = ()) -> int:
        return self._session.run(self._sql(sql), params)

    def _one(self, sql: str, params: Sequence[Any] = ()) -> Any:
        rows = self._rows(sql, params)
        return rows[0] if rows else None

    def _insert(self, sql: str, params: Sequence[Any]) -> int:
        """Run an ``INSERT`` and return the id the database gave the row."""
        return int(self._rows(f"{sql} RETURNING id", params)[0][0])
