"""A PostgreSQL database made before users existed (migrations ``m001`` … ``m007``) opens
with today's `PostgresStore`: the migrations shipped since run once, every token and event
is kept, the tokens still sign in, and the first start makes its admin user.

The old database is made as the SQLite upgrade test makes its file: with the schema as it
was then (the shared migrations up to ``m007``, which are never changed once shipped,
recorded in ``flagcore_migrations`` as the store of that time did) and filled through the
port with what that server kept (defaults, tokens, flags, strategies, segments, signals,
action sets, metrics, events).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

from flagcore.entities import TokenType
from flagcore.people import RootRole
from flagcore.service import NewUser, Service
from flagcore_sql import MIGRATIONS, POSTGRESQL, SqlTransaction
from flagcore_store_postgres import PostgresStore
from flagcore_store_postgres.session import PostgresSession, row_factory
from tests.cluster.postgres_server import empty_database
from tests.store.test_upgrade_from_v006 import _fill, everything_in

ADMIN = "*:*.admin-token-from-before-users"
CLIENT = "default:development.client-token-from-before-users"
BEFORE_USERS = 7  # m001 … m007: m008 brought users and sessions


class _StoreBeforeUsers:
    """The store of a server before users: one connection, the schema of then."""

    def __init__(self, url: str) -> None:
        self.connection = psycopg.connect(url, autocommit=True, row_factory=row_factory)

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[SqlTransaction]:
        with self.connection.transaction():
            yield SqlTransaction(PostgresSession(self.connection), POSTGRESQL)

    def revision(self) -> int:
        row = self.connection.execute("SELECT COALESCE(MAX(id), 0) FROM events").fetchone()
        assert row is not None
        return int(row[0])

    def close(self) -> None:
        self.connection.close()


def _migrated_before_users(url: str) -> None:
    assert MIGRATIONS[BEFORE_USERS - 1].name == "m007_api_token_ids"
    assert MIGRATIONS[BEFORE_USERS].name == "m008_users_and_sessions"
    with psycopg.connect(url, autocommit=True, row_factory=row_factory) as connection:
        connection.execute(
            "CREATE TABLE flagcore_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
        for migration in MIGRATIONS[:BEFORE_USERS]:
            with connection.transaction():
                migration.apply(PostgresSession(connection), POSTGRESQL)
                connection.execute(
                    "INSERT INTO flagcore_migrations (name, applied_at) VALUES (%s, %s)",
                    [migration.name, dt.datetime.now(dt.UTC).isoformat()],
                )


def _applied(url: str) -> list[str]:
    with psycopg.connect(url) as connection:
        rows = connection.execute("SELECT name FROM flagcore_migrations ORDER BY name")
        return [name for (name,) in rows.fetchall()]


def _read(store: Any) -> dict[str, Any]:
    with store.transaction(write=False) as tx:
        return {"revision": store.revision(), **everything_in(tx)}


def test_a_postgresql_database_made_before_users_migrates_with_its_tokens_and_events() -> None:
    url = empty_database()
    _migrated_before_users(url)
    old = _StoreBeforeUsers(url)
    try:
        service = Service(old)  # type: ignore[arg-type]  # the defaults, as a first start
        service.tokens.create_token("admin", TokenType.ADMIN, secret=ADMIN)
        service.tokens.create_token(
            "sdk", TokenType.CLIENT, projects=["default"], environment="development", secret=CLIENT
        )
        with old.transaction() as tx:
            _fill(tx)
        before = _read(old)
    finally:
        old.close()
    assert len(before["tokens"]) == 3
    assert len(before["events"]) >= 3

    store = PostgresStore(url, listen=False)
    try:
        shipped = sorted(m.name for m in MIGRATIONS)
        assert _applied(url) == shipped  # each migration since m007 applied once
        assert _read(store) == before  # every token and event, and the rest, kept
        service = Service(store)
        assert service.tokens.authenticate(ADMIN) is not None
        client = service.tokens.authenticate(CLIENT)
        assert client is not None
        assert client.type is TokenType.CLIENT
        # The first start of a database without users makes its admin and a link.
        link = service.users.ensure_first_admin()
        assert link is not None
        (admin,) = service.users.list_users()
        assert (admin.username, admin.root_role) == ("admin", RootRole.ADMIN)
        # People, groups and roles are kept from then on; old events come first.
        ann = service.users.create_user(NewUser(RootRole.VIEWER, email="ann@x.io"))
        service.roles.add_project_access("web", [ann.id], [4])
        events = service.events.list_events(limit=1000)
        assert events[-len(before["events"]) :] == before["events"]
        assert store.revision() > before["revision"]
    finally:
        store.close()
    store = PostgresStore(url, listen=False)  # opened again: nothing left to migrate
    store.close()
    assert _applied(url) == sorted(m.name for m in MIGRATIONS)
