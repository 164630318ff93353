"""The stores the service tests run over: one factory per store flagcore ships.

A factory takes pytest's ``tmp_path`` and returns a fresh, empty store. A new store joins
every service test by adding itself to `FACTORIES`, as the PostgreSQL store did.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from flagcore.memory import MemoryStore
from flagcore.ports import Store
from flagcore_store_postgres import PostgresStore
from flagcore_store_sqlite import SqliteStore
from tests.cluster.postgres_server import fresh_database

StoreFactory = Callable[[Path], Store]

FACTORIES: dict[str, StoreFactory] = {
    "memory": lambda _tmp: MemoryStore(),
    "sqlite-memory": lambda _tmp: SqliteStore(":memory:"),
    "sqlite-file": lambda tmp: SqliteStore(tmp / "flags.db"),
    # A fresh database on the session's private PostgreSQL (tests/cluster/postgres_server.py).
    "postgres": lambda _tmp: PostgresStore(fresh_database()),
}


@pytest.fixture(params=sorted(FACTORIES))
def every_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """Each store in turn, fresh and empty, closed after the test."""
    store = FACTORIES[request.param](tmp_path)
    yield store
    store.close()
