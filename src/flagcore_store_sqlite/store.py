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

`revision` is asked on every SDK request and must see a commit made by any process (the
workers of ``flagcore serve --workers N`` share one file): it compares the WAL-index
header (`flagcore_store_sqlite.revision_watch`) and reads the event table only when
someone committed since its last read.
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
from flagcore_store_sqlite.revision_watch import WalIndexWatch
from flagcore_store_sqlite.schema import migrations
from flagcore_store_sqlite.session import SqliteSession

__all__ = ["SqliteStore"]

_BUSY_TIMEOUT_S = 10.0
_LOCK_RETRY_S = 60.0
# Without a WAL index to watch, how long a revision read from the table is trusted when
# this store committed nothing since: another process's commit shows within this time.
_UNWATCHED_REVISION_TTL_S = 0.002


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
            # (header seen, revision read after it); None: nothing read yet.
            self._seen: tuple[bytes, int] | None = None
            self._watch = None if self._private else self._open_watch()
            self._commits = 0  # this store's write commits, for the unwatched fallback
            self._unwatched: tuple[int, float, int] = (-1, 0.0, 0)
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
            if write:
                self._commits += 1
                if self._private:
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
        watch = self._watch
        if watch is None:
            return self._unwatched_revision()
        header = watch.header()
        seen = self._seen
        if seen is not None and seen[0] == header:
            return seen[1]  # nobody committed since the last read
        with self._revision_lock:
            # The header is read before the table: a commit landing in between shows as a
            # changed header on the next call, never as a stale revision kept for good.
            revision = self._read_revision(self._revision_conn)
            self._seen = (header, revision)
        return revision

    def _open_watch(self) -> WalIndexWatch | None:
        with self._revision_lock:
            self._read_revision(self._revision_conn)  # maps the WAL index for this process
        return WalIndexWatch.open(self.path)

    def _unwatched_revision(self) -> int:
        """A table read, trusted for `_UNWATCHED_REVISION_TTL_S` unless this store wrote."""
        commits, read_at, revision = self._unwatched
        now = time.monotonic()
        if commits == self._commits and now - read_at < _UNWATCHED_REVISION_TTL_S:
            return revision
        commits = self._commits
        with self._revision_lock:
            revision = self._read_revision(self._revision_conn)
        self._unwatched = (commits, now, revision)
        return revision

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
            finally:
                # After the connections: its descriptor's close drops this process's locks
                # on the WAL index (see flagcore_store_sqlite.revision_watch).
                watch, self._watch = self._watch, None
                if watch is not None:
                    watch.close()
