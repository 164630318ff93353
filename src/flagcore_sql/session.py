"""`SqlSession`: the one thing a SQL adapter gives the shared transaction code."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

__all__ = ["Row", "SqlSession"]

Row = Any
"""A result row: read by column name (``row["name"]``) and unpacked by position
(``a, b = row``), as ``sqlite3.Row`` allows; a PostgreSQL adapter picks a row factory
that does both."""


class SqlSession(Protocol):
    """Runs statements inside the transaction the adapter has open.

    Statements come in the adapter's placeholder style already (`Dialect.sql`). Driver
    errors never leave a session: a broken unique or foreign key becomes
    `flagcore.errors.Conflict`, anything else `flagcore.errors.StorageError`.
    """

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[Row]:
        """Run ``sql`` and return all its rows (also for ``INSERT ... RETURNING``)."""
        ...

    def run(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run ``sql`` and return how many rows it changed."""
        ...
