"""The stores the service tests run over: one factory per store flagcore ships.

A factory takes pytest's ``tmp_path`` and returns a fresh, empty store. A new store (the
PostgreSQL one of issue #14) joins every service test by adding itself to `FACTORIES`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from flagcore.memory import MemoryStore
from flagcore.ports import Store
from flagcore_store_sqlite import SqliteStore

StoreFactory = Callable[[Path], Store]

FACTORIES: dict[str, StoreFactory] = {
    "memory": lambda _tmp: MemoryStore(),
    "sqlite-memory": lambda _tmp: SqliteStore(":memory:"),
    "sqlite-file": lambda tmp: SqliteStore(tmp / "flags.db"),
}
