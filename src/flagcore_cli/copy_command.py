"""``flagcore copy``: every row from one database into another (SQLite or PostgreSQL)."""

from __future__ import annotations

import sys
from pathlib import Path

from flagcore.ports import Store
from flagcore_cli.output import progress_bar, say
from flagcore_cli.stores import StartError, database_name, is_postgres, open_store
from flagcore_http.config import ServerConfig
from flagcore_sql import SqlTransaction
from flagcore_sql.copying import clear, copy_rows, counts, digest, is_empty

__all__ = ["copy_command"]


def _open_for_copy(db: str, *, source: bool) -> Store:
    if not is_postgres(db) and db != ":memory:":
        if len(db) > 4096 or any(ord(c) < 32 for c in db):
            raise StartError("the SQLite path is too long or has control characters")
        if source and not Path(db).is_file():
            raise StartError(f"there is no SQLite database at {db!r} to copy from")
    if is_postgres(db):
        from flagcore_store_postgres import PostgresStore

        return PostgresStore(db, listen=False)
    return open_store(ServerConfig(db=db))


def _progress(table: str, done: int, total: int) -> None:
    progress_bar(f"rows ({table})", done, total, end_line=False)


def copy_command(source_db: str, target_db: str, *, force: bool) -> int:
    """``flagcore copy``: everything from one store into another, in one transaction on the
    target, ids and revision kept; ends by comparing counts and a digest of both sides."""
    if source_db == target_db:
        raise StartError("--from and --to name the same database")
    source = _open_for_copy(source_db, source=True)
    try:
        target = _open_for_copy(target_db, source=False)
    except BaseException:
        source.close()
        raise
    progress = _progress if sys.stderr.isatty() else None
    try:
        with source.transaction(write=False) as read, target.transaction() as write:
            if not isinstance(read, SqlTransaction) or not isinstance(write, SqlTransaction):
                raise StartError("copy works between SQLite and PostgreSQL databases")
            if not is_empty(write):
                if not force:
                    raise StartError(
                        f"the target {database_name(target_db)} is not empty; "
                        "use --force to replace everything in it"
                    )
                clear(write)
            copy_rows(read, write, progress)
            if progress is not None:
                sys.stderr.write("\n")
            source_counts, target_counts = counts(read), counts(write)
            source_digest, target_digest = digest(read), digest(write)
            if source_counts != target_counts or source_digest != target_digest:
                raise StartError(
                    "the copy differs from the source (counts or digest); nothing was written"
                )
    finally:
        source.close()
        target.close()
    rows = sum(source_counts.values())
    listed = ", ".join(f"{table} {n}" for table, n in source_counts.items() if n)
    say(f"copied {rows} rows from {database_name(source_db)} to {database_name(target_db)}")
    say(f"counts match: {listed or 'no rows'}")
    say(f"digest matches: sha256 {source_digest}")
    return 0
