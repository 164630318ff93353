"""A private PostgreSQL for the tests: one server per test session, a fresh database per store.

``FLAGCORE_TEST_POSTGRES_URL`` (a superuser's URL) is used when set; otherwise `pgserver`
(PostgreSQL 16 binaries from pip) starts a server on a Unix socket in a temporary
directory, removed at exit. Fresh databases are copied from a migrated template
(``CREATE DATABASE ... TEMPLATE``), which is much faster than migrating each one.
Tests never skip for want of PostgreSQL: if it cannot start, they fail and say why.
"""

from __future__ import annotations

import atexit
import itertools
import os
import subprocess
import tempfile
import threading
import urllib.parse
import warnings
from pathlib import Path
from typing import Any

import psycopg

__all__ = ["PrivateServer", "admin_url", "empty_database", "fresh_database", "private_server"]

_lock = threading.Lock()
_admin_url: str | None = None
_template_ready = False
_names = itertools.count(1)
_TEMPLATE = "flagcore_test_template"


def _url_for(url: str, database: str) -> str:
    """``url`` (a postgresql:// URL) naming ``database`` instead."""
    return urllib.parse.urlsplit(url)._replace(path=f"/{database}").geturl()


class PrivateServer:
    """A PostgreSQL of our own, on a Unix socket, which a test may stop and start."""

    def __init__(self) -> None:
        with warnings.catch_warnings():
            # platformdirs warns that XDG_RUNTIME_DIR is unset (as in CI); pgserver copes.
            warnings.simplefilter("ignore")
            import pgserver

        self.directory = Path(tempfile.mkdtemp(prefix="flagcore-pg-"))
        self._server: Any = pgserver.get_server(self.directory, cleanup_mode="delete")
        self.url: str = self._server.get_uri()
        # A throwaway server: no fsync (a test database need not survive power loss, and
        # CREATE DATABASE ... TEMPLATE writes the template through the WAL each time).
        with psycopg.connect(self.url, autocommit=True) as connection:
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                connection.execute(f"ALTER SYSTEM SET {setting} = off")  # type: ignore[arg-type]
            connection.execute("SELECT pg_reload_conf()")
        info = self._server.get_postmaster_info()
        self.socket_dir = str(info.socket_dir)

    def database_url(self, database: str) -> str:
        return _url_for(self.url, database)

    def _pg_ctl(self, *args: str) -> None:
        from pgserver._commands import pg_ctl

        pg_ctl(list(args), pgdata=self._server.pgdata, user=self._server.system_user, timeout=30)

    def stop(self) -> None:
        """Stop PostgreSQL now (fast shutdown: connections are cut, nothing is lost)."""
        self._pg_ctl("-w", "-m", "fast", "stop")

    def start(self) -> None:
        self._pg_ctl(
            "-w", "-o", '-h ""', "-o", f"-k {self.socket_dir}", "-l", str(self._server.log), "start"
        )

    def close(self) -> None:
        self._server.cleanup()


def private_server() -> PrivateServer:
    """A new private server (for tests that stop and start PostgreSQL)."""
    return PrivateServer()


def admin_url() -> str:
    """The session's server: ``FLAGCORE_TEST_POSTGRES_URL``, or a pgserver started once."""
    global _admin_url
    with _lock:
        if _admin_url is None:
            given = os.environ.get("FLAGCORE_TEST_POSTGRES_URL")
            if given:
                _admin_url = given
            else:
                server = PrivateServer()
                atexit.register(server.close)
                _admin_url = server.url
        return _admin_url


def _execute(url: str, statement: str) -> None:
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(statement)  # type: ignore[arg-type]


def fresh_database() -> str:
    """The URL of a new, migrated, empty database on the session's server."""
    global _template_ready
    from flagcore_store_postgres import PostgresStore

    url = admin_url()
    prefix = f"flagcore_test_{os.getpid()}"
    with _lock:
        if not _template_ready:
            _execute(url, f"DROP DATABASE IF EXISTS {_TEMPLATE}_{os.getpid()}")
            _execute(url, f"CREATE DATABASE {_TEMPLATE}_{os.getpid()}")
            PostgresStore(_url_for(url, f"{_TEMPLATE}_{os.getpid()}"), listen=False).close()
            _template_ready = True
            if os.environ.get("FLAGCORE_TEST_POSTGRES_URL"):
                atexit.register(_drop_all, url, prefix)
        name = f"{prefix}_{next(_names)}"
        _execute(url, f"CREATE DATABASE {name} TEMPLATE {_TEMPLATE}_{os.getpid()}")
    return _url_for(url, name)


def empty_database() -> str:
    """The URL of a new database with no table at all (not even migrated), on the
    session's server: for a test that makes the schema of an older flagcore itself."""
    url = admin_url()
    with _lock:
        name = f"flagcore_test_{os.getpid()}_{next(_names)}"
        _execute(url, f"CREATE DATABASE {name}")
    return _url_for(url, name)


def _drop_all(url: str, prefix: str) -> None:
    """On a server we did not start, drop the databases this run made."""
    try:
        with psycopg.connect(url, autocommit=True) as connection:
            names = connection.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE %s",
                [prefix + "%"],
            ).fetchall()
            for (name,) in names:
                connection.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]
            connection.execute(f"DROP DATABASE IF EXISTS {_TEMPLATE}_{os.getpid()}")  # type: ignore[arg-type]
    except (psycopg.Error, subprocess.SubprocessError):
        pass
