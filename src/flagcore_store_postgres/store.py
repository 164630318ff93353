"""`PostgresStore`: flagcore's store on PostgreSQL, for several nodes over one database.

The queries, the schema and the row ↔ model mapping are the shared SQL layer's
(`flagcore_sql`, dialect `flagcore_sql.POSTGRESQL`); this module keeps what is
PostgreSQL's own:

- Connections come from a psycopg-pool pool (autocommit connections on which the store
  issues ``BEGIN``/``COMMIT`` itself), bounded in size and in how long a caller waits.
- Every write transaction first takes one transaction-scoped advisory lock
  (`flagcore_store_postgres.schema.WRITE_LOCK`), so writes are serialised across every
  node exactly as SQLite's ``BEGIN IMMEDIATE`` serialises them in one file. That is what
  makes the service's read-check-write rules (signal rate limit, endpoint and token
  counts, segment and constraint limits) hold system-wide, enforced by the database, and
  keeps event ids (the revision) growing in commit order.
- Read transactions are ``REPEATABLE READ READ ONLY``: one consistent snapshot.
- The revision (the newest event id) lives in the database. Each write transaction reads
  it and ``NOTIFY``s it on `REVISION_CHANNEL` before it commits (PostgreSQL delivers the
  notification at commit). A listener thread per store ``LISTEN``s on a dedicated
  connection and re-reads the revision every ``revision_check_interval`` seconds, as a
  safety net for a lost notification. So `revision()` is answered from memory, never a
  query per request, and never waits for a write.
- When the database cannot be reached the listener notices (its connection breaks), the
  store reports `available` False and refuses transactions at once with
  `DatabaseUnavailable` (503) instead of making callers wait; the listener reconnects
  with a bounded backoff, re-reads the revision (catching up on missed changes), and
  makes the store available again.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs
import psycopg
from psycopg import conninfo
from psycopg_pool import ConnectionPool, PoolTimeout

from flagcore.errors import FlagcoreError, StorageError
from flagcore_sql import POSTGRESQL, SqlTransaction
from flagcore_store_postgres.schema import WRITE_LOCK, migrate
from flagcore_store_postgres.session import (
    DatabaseUnavailable,
    PostgresSession,
    row_factory,
    translate,
)

__all__ = ["REVISION_CHANNEL", "PostgresSettings", "PostgresStore", "is_postgres_url"]

log = logging.getLogger("flagcore_store_postgres")

REVISION_CHANNEL = "flagcore_revision"
_SCHEMES = ("postgresql://", "postgres://")
_LISTEN_WAKE_S = 0.1  # how often the listener looks up from waiting (to notice close())
_MAX_BACKOFF_S = 1.0


def is_postgres_url(db: str) -> bool:
    """Whether ``db`` names a PostgreSQL database (otherwise it is a SQLite path)."""
    return db.startswith(_SCHEMES)


@attrs.frozen(kw_only=True)
class PostgresSettings:
    """How a node uses PostgreSQL; the defaults suit a node serving SDKs from memory."""

    pool_size: int = 10
    """Connections at most (writes are serialised; reads run alongside)."""
    pool_timeout: float = 5.0
    """Seconds a transaction waits for a free connection before a 503."""
    connect_timeout: float = 5.0
    """Seconds a connection attempt may take (at start, and each reconnect)."""
    revision_check_interval: float = 2.0
    """Seconds between revision reads by the listener, the safety net for lost NOTIFYs."""
    statement_timeout: float = 30.0
    """Seconds one statement may run (and a writer wait for the write lock)."""


def describe(url: str) -> str:
    """``url`` as a message may show it: user, host, port and database, never a password."""
    try:
        parts = conninfo.conninfo_to_dict(url)
    except psycopg.Error:
        return "postgresql://(malformed)"
    user = f"{parts['user']}@" if parts.get("user") else ""
    host = str(parts.get("host") or "localhost")
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{host}{port}/{parts.get('dbname', '')}"


class PostgresStore:
    """Opens (creating or upgrading the schema of) the PostgreSQL database at ``url``.

    Raises `flagcore.errors.StorageError` with one clear line if the URL is malformed,
    the server cannot be reached, the credentials are refused, or the database was
    upgraded by a newer flagcore.
    """

    def __init__(
        self, url: str, settings: PostgresSettings | None = None, *, listen: bool = True
    ) -> None:
        self.settings = settings or PostgresSettings()
        self.url = url
        self.where = describe(url)
        _check_url(url)
        self._connect_kwargs: dict[str, Any] = {
            "autocommit": True,
            "connect_timeout": max(1, round(self.settings.connect_timeout)),
            "options": f"-c statement_timeout={int(self.settings.statement_timeout * 1000)}",
            "row_factory": row_factory,
        }
        self._revision = 0
        self._revision_lock = threading.Lock()
        self._callbacks: list[Callable[[int], None]] = []
        self._available = threading.Event()
        self._recheck = threading.Event()
        self._closing = threading.Event()
        try:
            with self._connect() as connection:
                migrate(connection)
                self._observe(self._read_revision(connection))
        except StorageError as error:
            raise StorageError(f"{self.where}: {error.message}") from None
        except psycopg.Error as exc:
            reason = _first_line(exc)
            password = str(conninfo.conninfo_to_dict(url).get("password") or "")
            if password:  # never in a message, even if a driver quoted it
                reason = reason.replace(password, "…")
            raise StorageError(f"cannot open {self.where}: {reason}") from None
        self._available.set()
        self._pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            url,
            min_size=1,
            max_size=self.settings.pool_size,
            timeout=self.settings.pool_timeout,
            kwargs=dict(self._connect_kwargs),
            reconnect_timeout=3600 * 24 * 365,  # never give up: outages end
            open=True,
            name="flagcore",
        )
        self._listener: threading.Thread | None = None
        if listen:
            self._listener = threading.Thread(
                target=self._listen, name="flagcore-pg-listener", daemon=True
            )
            self._listener.start()

    def _connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self.url, **self._connect_kwargs)

    # --- transactions ---

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[SqlTransaction]:
        if not self._available.is_set():
            raise DatabaseUnavailable(
                "the database is unavailable; this node reconnects by itself, retry later"
            )
        connection = self._checkout(write)
        session = PostgresSession(connection)
        try:
            try:
                yield SqlTransaction(session, POSTGRESQL)
                revision = self._before_commit(connection) if write else None
                connection.execute("COMMIT")
            except psycopg.Error as exc:
                raise translate(exc, connection) from exc
            except BaseException:
                self._rollback(connection)
                raise
        except FlagcoreError as error:
            self._rollback(connection)
            if isinstance(error, DatabaseUnavailable):
                self._lost_connection()
            raise
        finally:
            self._pool.putconn(connection)
        if revision is not None:
            self._observe(revision)

    def _checkout(self, write: bool) -> psycopg.Connection[Any]:
        """A pooled connection with the transaction begun (and, to write, the write lock).

        A connection broken by an outage that has ended is dropped and another taken, so
        the first writes after a restart of PostgreSQL do not fail for stale connections.
        """
        opening = "BEGIN" if write else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
        for _attempt in range(self.settings.pool_size + 1):
            try:
                connection = self._pool.getconn()
            except PoolTimeout:
                raise DatabaseUnavailable(
                    f"the database is unavailable: no connection within "
                    f"{self.settings.pool_timeout:g} s"
                ) from None
            try:
                connection.execute(opening)
                if write:
                    connection.execute("SELECT pg_advisory_xact_lock(%s)", [WRITE_LOCK])
                return connection
            except psycopg.Error as exc:
                error = translate(exc, connection)
                self._rollback(connection)
                self._pool.putconn(connection)
                if not isinstance(error, DatabaseUnavailable):
                    raise error from exc
        self._lost_connection()
        raise DatabaseUnavailable("the database is unavailable: every connection failed")

    def _before_commit(self, connection: psycopg.Connection[Any]) -> int:
        """The revision this write makes, announced to every node when it commits."""
        row = connection.execute(
            "SELECT r, pg_notify(%s, r::text) FROM "
            "(SELECT coalesce(max(id), 0) AS r FROM events) AS newest",
            [REVISION_CHANNEL],
        ).fetchone()
        assert row is not None
        return int(row[0])

    @staticmethod
    def _rollback(connection: psycopg.Connection[Any]) -> None:
        with contextlib.suppress(psycopg.Error):
            if not connection.closed and not connection.broken:
                connection.execute("ROLLBACK")

    # --- the revision ---

    def revision(self) -> int:
        """The newest event id this node knows of: from memory, fed by commits and NOTIFY."""
        return self._revision

    @property
    def available(self) -> bool:
        """Whether the database answers (the listener's connection is up)."""
        return self._available.is_set()

    def on_revision(self, callback: Callable[[int], None]) -> None:
        """Call ``callback(revision)`` whenever this node learns of a newer revision.

        It runs on the thread that learned it (the listener's or a writer's): keep it
        short, and hand over to an event loop with ``loop.call_soon_threadsafe``.
        """
        self._callbacks.append(callback)

    def _observe(self, revision: int) -> None:
        with self._revision_lock:
            if revision <= self._revision:
                return
            self._revision = revision
        for callback in list(self._callbacks):
            try:
                callback(revision)
            except Exception:  # a listener's bug must not stop revisions flowing
                log.exception("a revision callback failed")

    @staticmethod
    def _read_revision(connection: psycopg.Connection[Any]) -> int:
        row = connection.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()
        assert row is not None
        return int(row[0])

    def _lost_connection(self) -> None:
        """A transaction's connection broke: unavailable until the listener has checked
        that the database answers (one killed backend is not an outage; a restart is)."""
        if self._listener is not None and self._available.is_set():
            log.warning("lost a connection to %s; checking the database", self.where)
            self._available.clear()
            self._recheck.set()

    def _listen(self) -> None:
        """LISTEN for revisions; re-read the revision now and then; reconnect after outages."""
        backoff = 0.05
        while not self._closing.is_set():
            try:
                with self._connect() as connection:
                    connection.execute(f"LISTEN {REVISION_CHANNEL}")
                    self._observe(self._read_revision(connection))
                    if not self._available.is_set():
                        self._pool.check()  # drop connections the outage broke
                        log.warning("reconnected to %s", self.where)
                        self._available.set()
                    backoff = 0.05
                    self._follow(connection)
            except psycopg.Error as exc:
                if self._closing.is_set():
                    return
                if self._available.is_set():
                    log.warning(
                        "lost the connection to %s (%s); serving from memory",
                        self.where,
                        _first_line(exc),
                    )
                    self._available.clear()
                self._closing.wait(backoff)
                backoff = min(backoff * 2, _MAX_BACKOFF_S)

    def _follow(self, connection: psycopg.Connection[Any]) -> None:
        checked = time.monotonic()
        while not self._closing.is_set():
            for notice in connection.notifies(timeout=_LISTEN_WAKE_S, stop_after=64):
                with contextlib.suppress(ValueError):
                    self._observe(int(notice.payload))
            recheck = self._recheck.is_set()
            if recheck or time.monotonic() - checked >= self.settings.revision_check_interval:
                self._observe(self._read_revision(connection))
                checked = time.monotonic()
            if recheck:  # the database answered: drop broken pooled connections, go on
                self._recheck.clear()
                self._pool.check()
                self._available.set()

    def close(self) -> None:
        self._closing.set()
        if self._listener is not None:
            self._listener.join(timeout=5)
        self._pool.close()


def _check_url(url: str) -> None:
    """`StorageError` unless ``url`` parses, with a numeric port (libpq's own message for a
    bad port says "connection is bad", which sounds like the server's fault)."""
    advice = "write it as postgresql://user:password@host:5432/database"
    try:
        parts = conninfo.conninfo_to_dict(url)
    except psycopg.Error:
        # psycopg's message quotes the URL, password and all: say only that it is malformed.
        raise StorageError(f"malformed PostgreSQL URL; {advice}") from None
    for port in str(parts.get("port") or "5432").split(","):
        if not port.isdigit() or not 0 < int(port) < 65536:
            raise StorageError(f"malformed PostgreSQL URL (port {port[:20]!r}); {advice}")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
