"""The port contract suite (`flagcore.testing.StorePortContract`) over every shipped store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flagcore.memory import MemoryStore
from flagcore.testing import StorePortContract
from flagcore_store_sqlite import SqliteStore


class TestMemoryStore(StorePortContract):
    @pytest.fixture
    def store(self) -> Iterator[MemoryStore]:
        store = MemoryStore()
        yield store
        store.close()


class TestSqliteInMemory(StorePortContract):
    @pytest.fixture
    def store(self) -> Iterator[SqliteStore]:
        store = SqliteStore(":memory:")
        yield store
        store.close()


class TestSqliteOnAFile(StorePortContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[SqliteStore]:
        store = SqliteStore(tmp_path / "flags.db")
        yield store
        assert store.integrity_check() == "ok"
        store.close()
