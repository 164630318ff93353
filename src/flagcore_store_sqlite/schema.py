"""The SQLite schema: the shared migrations of `flagcore_sql.schema`, run by sqlite-utils.

Each shared `flagcore_sql.Migration` is registered under its own name in a sqlite-utils
`Migrations` set named ``flagcore``, which records applied names in
``_sqlite_migrations``: a database made before the shared layer (with ``m001_initial`` …
``m006_metrics_buckets_and_retention`` applied by this module's earlier version) opens
with nothing to redo, and gets only the migrations appended since.
"""

from __future__ import annotations

from sqlite_utils import Database
from sqlite_utils.migrations import Migrations

from flagcore_sql import MIGRATIONS, SQLITE, Migration
from flagcore_store_sqlite.session import SqliteSession

__all__ = ["migrations"]

migrations = Migrations("flagcore")


def _register(migration: Migration) -> None:
    def step(db: Database) -> None:
        migration.apply(SqliteSession(db), SQLITE)

    step.__name__ = migration.name
    migrations(name=migration.name)(step)


for _migration in MIGRATIONS:
    _register(_migration)
