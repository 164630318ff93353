"""`SqliteStore`: flagcore's durable embedded store, a thin adapter over `flagcore_sql`.

The queries, the schema and the row ↔ model mapping are the shared SQL layer's
(`flagcore_sql`, dialect `flagcore_sql.SQLITE`); this module keeps what is SQLite's own.
One connection (sqlite-utils `Database`), guarded by a lock, so the store can be shared
by threads; several processes may open the same file. Durability settings: WAL journal,
``synchronous=FULL`` (a committed transaction survives power loss, not only a crash),
foreign keys on, and a busy timeout plus retries so concurrent writers wait for each
other instead of failing. Write transactions start with ``BEGIN IMMEDIATE``, so two
writers never deadlock upgrading a read lock. No ``sqlite3`` error leaves this package:
`flagcore_store_sqlite.session.SqliteSession` translates each into `flagcore.errors`.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlite_utils import Database

from flagcore.errors import StorageError
from flagcore_sql import SQLITE, SqlTransaction
from flagcore_store_sqlite.schema import migrations
from flagcore_store_sqlite.session import SqliteSession

__all__ = ["SqliteStore"]

_BUSY_TIMEOUT_S = 10.0
_LOCK_RETRY_S = 60.0


class SqliteStore:
    """Opens (creating or upgrading) the database at ``path``; ``":memory:"`` for a private one."""

    def __init__(self, path: str | Path = "flagcore.db") -> None:
        self.path = str(path)
        try:
            connection = sqlite3.connect(
                self.path, timeout=_BUSY_TIMEOUT_S, check_same_thread=False
            )
            self._db = Database(connection, execute_plugins=False)
            self._db.execute("PRAGMA foreign_keys = ON")
            if self.path != ":memory:":
                self._db.execute("PRAGMA journal_mode = WAL")
            self._db.execute("PRAGMA synchronous = FULL")
            self._db.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
            self._lock = threading.RLock()
            with self._lock:
                self._retry_locked(lambda: migrations.apply(self._db))
            # revision() has its own connection: in WAL mode a reader never waits for the
            # writer, so an event loop can ask for the revision without blocking on a write.
            self._revision_lock = threading.Lock()
            self._revision_conn = (
                connection
                if self.path == ":memory:"
                else sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, check_same_thread=False)
            )
            self._private = self._revision_conn is connection
            self._private_revision = self._read_revision(connection)
        except sqlite3.Error as exc:
            raise StorageError(f"cannot open the SQLite database {self.path!r}: {exc}") from exc

    def _retry_locked(self, action: Any) -> Any:
        """Run ``action``, retrying while another process holds the write lock."""
        deadline = time.monotonic() + _LOCK_RETRY_S
        delay = 0.005
        while True:
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                if time.monotonic() > deadline:
                    raise StorageError(f"the database stayed locked: {exc}") from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.2)

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[SqlTransaction]:
        conn = self._db.conn
        with self._lock:
            try:
                self._retry_locked(
                    lambda: conn.execute("BEGIN IMMEDIATE" if write else "BEGIN DEFERRED")
                )
            except sqlite3.Error as exc:
                raise StorageError(f"cannot start a transaction: {exc}") from exc
            try:
                yield SqlTransaction(SqliteSession(self._db), SQLITE)
            except BaseException:
                self._rollback()
                raise
            try:
                self._retry_locked(lambda: conn.execute("COMMIT"))
            except sqlite3.Error as exc:
                self._rollback()
                raise StorageError(f"the transaction could not be committed: {exc}") from exc
            if write and self._private:
                self._private_revision = self._read_revision(conn)

    def _rollback(self) -> None:
        try:
            if self._db.conn.in_transaction:
                self._db.conn.execute("ROLLBACK")
        except sqlite3.Error:  # pragma: no cover - the connection is gone; nothing was committed
            pass

    def revision(self) -> int:
        if self._private:
            # One private in-memory database has one connection, busy while a unit is
            # open: answer from the last commit instead of waiting (no one else writes).
            return self._private_revision
        with self._revision_lock:
            return self._read_revision(self._revision_conn)

    @staticmethod
    def _read_revision(conn: sqlite3.Connection) -> int:
        try:
            row = conn.execute("SELECT max(id) FROM events").fetchone()
        except sqlite3.Error as exc:
            raise StorageError(f"cannot read the revision: {exc}") from exc
        return int(row[0] or 0)

    def integrity_check(self) -> str:
        with self._lock:
            return str(self._db.execute("PRAGMA integrity_check").fetchone()[0])

    def close(self) -> None:
        with self._lock:
            try:
                if self._revision_conn is not self._db.conn:
                    self._revision_conn.close()
                self._db.close()
            except sqlite3.Error as exc:  # pragma: no cover
                raise StorageError(f"cannot close the database: {exc}") from exc
