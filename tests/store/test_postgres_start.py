"""Opening a PostgreSQL store: bad URLs, refused connections, newer schemas, one migration."""

from __future__ import annotations

import datetime as dt
import subprocess
import threading
import time

import psycopg
import pytest

from flagcore.errors import StorageError
from flagcore_sql import MIGRATIONS
from flagcore_store_postgres import PostgresSettings, PostgresStore
from tests.cluster.postgres_server import admin_url, fresh_database
from tests.http.serving import command, env


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("postgresql://flagcore:s3cret-pw@127.0.0.1:notaport/db", "malformed PostgreSQL URL"),
        ("postgresql://flagcore:s3cret-pw@127.0.0.1:1/db", "cannot open postgresql://"),
        ("postgresql://flagcore:s3cret-pw@[::1/db", "malformed PostgreSQL URL"),
    ],
)
def test_a_bad_url_or_unreachable_server_stops_the_start_with_one_line(url: str, says: str) -> None:
    done = subprocess.run(
        command("serve", "--port", "0", "--db", url, "--db-connect-timeout", "1"),
        capture_output=True,
        text=True,
        env=env(),
        timeout=60,
    )
    assert done.returncode != 0
    assert done.stdout == ""
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert says in lines[0]
    assert "Traceback" not in done.stderr
    assert "s3cret-pw" not in done.stderr


def test_refused_credentials_stop_the_start_with_one_line() -> None:
    url = admin_url().replace("postgres:@", "nobody-here:s3cret-pw@", 1)
    done = subprocess.run(
        command("serve", "--port", "0", "--db", url),
        capture_output=True,
        text=True,
        env=env(),
        timeout=60,
    )
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "nobody-here" in lines[0]
    assert "s3cret-pw" not in done.stderr


def test_a_database_upgraded_by_a_newer_flagcore_is_refused() -> None:
    url = fresh_database()
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(
            "INSERT INTO flagcore_migrations (name, applied_at) VALUES ('m999_future', 'now')"
        )
    with pytest.raises(StorageError, match="newer flagcore"):
        PostgresStore(url)


def test_stores_opening_at_once_on_an_empty_database_migrate_it_once() -> None:
    name = "flagcore_migrate_once"
    base = admin_url()
    with psycopg.connect(base, autocommit=True) as connection:
        connection.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")  # type: ignore[arg-type]
        connection.execute(f"CREATE DATABASE {name}")  # type: ignore[arg-type]
    from tests.cluster.postgres_server import _url_for

    url = _url_for(base, name)
    stores: list[PostgresStore] = []
    errors: list[BaseException] = []

    def open_one() -> None:
        try:
            stores.append(PostgresStore(url, PostgresSettings(pool_size=2), listen=False))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=open_one) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    for store in stores:
        store.close()
    assert errors == []
    with psycopg.connect(url) as connection:
        applied = [row[0] for row in connection.execute("SELECT name FROM flagcore_migrations")]
    assert sorted(applied) == sorted(m.name for m in MIGRATIONS)


def _write_while_the_connection_is_killed(store: PostgresStore, url: str) -> None:
    from flagcore.entities import Project

    with store.transaction() as tx:
        tx.save_project(Project("half", "Half", None, dt.datetime.now(dt.UTC)))
        with psycopg.connect(url, autocommit=True) as killer:
            killer.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                "AND state = 'idle in transaction'"
            )
        tx.append_event("project-created", "alice", project="half")


def test_a_connection_lost_in_the_middle_of_a_write_writes_nothing_and_says_unavailable() -> None:
    from flagcore_store_postgres.session import DatabaseUnavailable

    url = fresh_database()
    store = PostgresStore(url)
    try:
        with pytest.raises(DatabaseUnavailable, match="database is unavailable"):
            _write_while_the_connection_is_killed(store, url)
        # The store comes back by itself; the half-done change is nowhere.
        deadline = time.monotonic() + 10
        while not store.available:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        with store.transaction(write=False) as tx:
            assert tx.get_project("half") is None
    finally:
        store.close()


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--db-pool-size", "0"),
        ("--db-pool-timeout", "never"),
        ("--db-connect-timeout", "-1"),
        ("--db-revision-check-interval", "0"),
    ],
)
def test_a_bad_database_setting_is_named(flag: str, value: str) -> None:
    done = subprocess.run(
        command("serve", "--port", "0", "--db", "postgresql://x:pw@h/db", flag, value),
        capture_output=True,
        text=True,
        env=env(),
        timeout=60,
    )
    assert done.returncode == 2
    assert flag in done.stderr
    assert "pw@" not in done.stderr
