"""The PostgreSQL schema: the shared migrations of `flagcore_sql.schema`, applied once.

Applied names are kept in ``flagcore_migrations``. Several nodes starting at the same
moment migrate once: each takes a session advisory lock (`MIGRATION_LOCK`) before
reading which migrations are applied, so the second waits, then finds nothing to do.
A database with a migration name this flagcore does not know was upgraded by a newer
flagcore: it is refused, never written to, since this version cannot keep its promises.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import psycopg

from flagcore.errors import StorageError
from flagcore_sql import MIGRATIONS, POSTGRESQL
from flagcore_store_postgres.session import PostgresSession

__all__ = ["MIGRATION_LOCK", "WRITE_LOCK", "NewerDatabase", "migrate"]

# Advisory lock keys (any 64-bit numbers, fixed so that every node takes the same ones).
MIGRATION_LOCK = 0x666C6167636F7201  # "flagcor" 01
WRITE_LOCK = 0x666C6167636F7202  # "flagcor" 02: every write transaction, see store.py


class NewerDatabase(StorageError):
    """The database was upgraded by a newer flagcore than this one."""


def migrate(connection: psycopg.Connection[Any]) -> list[str]:
    """Apply the missing migrations on ``connection`` (autocommit); return their names."""
    connection.execute("SELECT pg_advisory_lock(%s)", [MIGRATION_LOCK])
    try:
        connection.execute(
            "CREATE TABLE IF NOT EXISTS flagcore_migrations ("
            "name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
        applied = {row[0] for row in connection.execute("SELECT name FROM flagcore_migrations")}
        known = [m.name for m in MIGRATIONS]
        unknown = sorted(applied - set(known))
        if unknown:
            raise NewerDatabase(
                "the database was upgraded by a newer flagcore (it has migration "
                f"{unknown[0]!r}, which this version does not know); run that version or "
                "a newer one"
            )
        done: list[str] = []
        for migration in MIGRATIONS:
            if migration.name in applied:
                continue
            with connection.transaction():
                migration.apply(PostgresSession(connection), POSTGRESQL)
                connection.execute(
                    "INSERT INTO flagcore_migrations (name, applied_at) VALUES (%s, %s)",
                    [migration.name, dt.datetime.now(dt.UTC).isoformat()],
                )
            done.append(migration.name)
        return done
    finally:
        connection.execute("SELECT pg_advisory_unlock(%s)", [MIGRATION_LOCK])
