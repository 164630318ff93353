"""Opening the store ``--db`` names (a SQLite path or a ``postgresql://`` URL), as every
command and the pytest server plugin do; and the one-line error a command stops with."""

from __future__ import annotations

from pathlib import Path

from flagcore.ports import Store
from flagcore_http.config import ServerConfig

__all__ = [
    "StartError",
    "database_files",
    "database_name",
    "is_postgres",
    "open_store",
]


class StartError(Exception):
    """The server cannot start; the message is the one line the operator sees, and
    ``exit_code`` the status: 2 for a setting that cannot be used (as `ConfigError`),
    1 for anything else (a taken port, a database that cannot be opened)."""

    def __init__(self, message: str, *, exit_code: int = 1) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def database_files(db: str) -> list[Path]:
    """A SQLite database's files, to remove what a failed first start made."""
    return [Path(db + suffix) for suffix in ("", "-wal", "-shm", "-journal")]


def is_postgres(db: str) -> bool:
    return db.startswith(("postgresql://", "postgres://"))


def database_name(db: str) -> str:
    """How the start line names the database: a PostgreSQL URL without its password."""
    if not is_postgres(db):
        return db
    from flagcore_store_postgres.store import describe

    return describe(db)


def open_store(config: ServerConfig) -> Store:
    """The store ``--db`` names: a ``postgresql://`` URL, or else a SQLite path."""
    if not is_postgres(config.db):
        from flagcore_store_sqlite import SqliteStore

        return SqliteStore(config.db)
    try:
        from flagcore_store_postgres import PostgresSettings, PostgresStore
    except ImportError:
        raise StartError(
            "--db names a PostgreSQL database, but psycopg is not installed; "
            "install flagcore[postgres]"
        ) from None
    settings = PostgresSettings(
        pool_size=config.db_pool_size,
        pool_timeout=config.db_pool_timeout,
        connect_timeout=config.db_connect_timeout,
        revision_check_interval=config.db_revision_check_interval,
    )
    return PostgresStore(config.db, settings)
