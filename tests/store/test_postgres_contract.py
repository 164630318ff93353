"""The port contract suite over the PostgreSQL store, on a fresh database per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from flagcore.testing import StorePortContract
from flagcore_store_postgres import PostgresStore
from tests.cluster.postgres_server import fresh_database


class TestPostgresStore(StorePortContract):
    @pytest.fixture
    def store(self) -> Iterator[PostgresStore]:
        store = PostgresStore(fresh_database())
        yield store
        store.close()
