"""flagcore's durable embedded store on SQLite (sqlite-utils); install with the ``sqlite`` extra."""

from flagcore_store_sqlite.store import SqliteStore

__all__ = ["SqliteStore"]
