"""Every type of event the service writes carries the same JSON as before event data
became typed values (issue 27): the events API, the UI's event diff, integrations'
messages and Slack texts read it, so each event of one walk through the service
(`tests.service.event_scenario`, 109 types) is pinned as written, key order included,
over the memory store and SQLite (whose stored column is checked byte for byte).

`event_data_pinned.json` was written by that walk before the refactor; a change to it is
a change of what integrations receive, to be made on purpose.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from flagcore.memory import MemoryStore
from flagcore.ports import Store
from flagcore_store_sqlite import SqliteStore
from tests.service.event_scenario import name_ids, pinned, walk

PINNED: list[dict[str, Any]] = json.loads(
    (Path(__file__).parent / "event_data_pinned.json").read_text(encoding="utf-8")
)


def _walked(store: Store) -> list[dict[str, Any]]:
    walk(store)
    with store.transaction(write=False) as tx:
        return pinned(list(tx.list_events(limit=10_000)))


def test_the_walk_writes_every_type_of_event_the_service_writes() -> None:
    assert len({row["type"] for row in PINNED}) == 109


@pytest.mark.parametrize("kind", ["memory", "sqlite"])
def test_each_event_carries_the_json_it_carried_before(kind: str, tmp_path: Path) -> None:
    store: Store = MemoryStore() if kind == "memory" else SqliteStore(tmp_path / "flags.db")
    try:
        written = _walked(store)
    finally:
        store.close()
    assert [row["type"] for row in written] == [row["type"] for row in PINNED]
    for got, expected in zip(written, PINNED, strict=True):
        assert got == expected


def test_the_memory_store_keeps_plain_json_values_not_tuples_or_classes() -> None:
    store = MemoryStore()
    walk(store)
    with store.transaction(write=False) as tx:
        events = sorted(tx.list_events(limit=10_000), key=lambda e: e.id)
    for event, expected in zip(events, PINNED, strict=True):
        for value, text in ((event.data, expected["data"]), (event.pre_data, expected["preData"])):
            # Equal to what JSON reads back: lists, dicts and scalars only (a tuple is not
            # equal to a list), so in-process readers see what a SQL store gives them.
            assert _plain(value), (event.type, value)
            if text is not None and "<id " not in text:
                assert value == json.loads(text), event.type


def test_sqlite_stores_each_events_json_byte_for_byte(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "flags.db")
    try:
        walk(store)
    finally:
        store.close()
    with sqlite3.connect(tmp_path / "flags.db") as db:
        stored = db.execute("SELECT data, pre_data FROM events ORDER BY id").fetchall()
    compact = [(_compact(row["data"]), _compact(row["preData"])) for row in PINNED]
    assert name_ids(stored) == compact


def _compact(text: str | None) -> str | None:
    if text is None:
        return None
    return json.dumps(json.loads(text), ensure_ascii=False, separators=(",", ":"))


def _plain(value: Any) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))
