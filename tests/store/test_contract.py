"""The store contract suite over every store flagcore ships."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from flagcore.memory import MemoryStore
from flagcore.testing import StoreContract
from flagcore_store_sqlite import SqliteStore


class TestMemoryStore(StoreContract):
    @pytest.fixture
    def store(self) -> Iterator[MemoryStore]:
        store = MemoryStore()
        yield store
        store.close()


class TestSqliteInMemory(StoreContract):
    @pytest.fixture
    def store(self) -> Iterator[SqliteStore]:
        store = SqliteStore(":memory:")
        yield store
        store.close()


class TestSqliteOnAFile(StoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[SqliteStore]:
        store = SqliteStore(tmp_path / "flags.db")
        yield store
        assert store.integrity_check() == "ok"
        store.close()
