"""Migration m005_segment_created: segments made before it get a creation time and author."""

from __future__ import annotations

import datetime as dt
import json
import sqlite3
from pathlib import Path

from sqlite_utils import Database

from flagcore_store_sqlite import SqliteStore
from flagcore_store_sqlite.schema import migrations


def test_segments_made_before_the_migration_take_their_creation_from_the_event_log(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.db"
    db = Database(sqlite3.connect(path))
    migrations.apply(db, stop_before="m005_segment_created")
    for name in ("logged", "unlogged"):
        db.execute("INSERT INTO segments (name, constraints) VALUES (?, '[]')", [name])
    db.execute(
        "INSERT INTO events (type, created_by, created_at, data) VALUES (?, ?, ?, ?)",
        [
            "segment-created",
            "token:admin",
            "2025-05-06T07:08:09.123456+00:00",
            json.dumps({"id": 1}),
        ],
    )
    db.conn.commit()
    db.close()

    store = SqliteStore(path)
    try:
        with store.transaction(write=False) as tx:
            logged, unlogged = tx.list_segment_definitions()
    finally:
        store.close()
    assert logged.segment.name == "logged"
    assert (logged.created_at, logged.created_by) == (
        dt.datetime(2025, 5, 6, 7, 8, 9, 123456, tzinfo=dt.UTC),
        "token:admin",
    )
    assert unlogged.created_by is None
    assert abs(unlogged.created_at - dt.datetime.now(dt.UTC)) < dt.timedelta(minutes=5)
