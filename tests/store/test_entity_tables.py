"""Tables derived from an entity's fields: a new plain field is stored with no mapping code."""

from __future__ import annotations

import datetime as dt
import sqlite3

import attrs

from flagcore import tables
from flagcore.entities import FlagDefinition
from flagcore.model import Dependency
from flagcore.tables import Table
from flagcore_sql.entity_tables import EntityTable
from flagcore_sql.tables import ROWS

FLAGS = ROWS["flags"]


@attrs.frozen
class _Thing:
    name: str
    note: str | None = None
    active: bool = False
    seen_at: dt.datetime | None = None
    needs: tuple[Dependency, ...] = ()


def test_an_entity_round_trips_through_columns_derived_from_its_fields() -> None:
    table = EntityTable(Table(_Thing, "things", key=("name",), order=("name",)))
    db = sqlite3.connect(":memory:")
    db.row_factory = sqlite3.Row
    db.execute(
        "CREATE TABLE things (name TEXT PRIMARY KEY, note TEXT, active INTEGER, "
        "seen_at TEXT, needs TEXT)"
    )
    seen = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    thing = _Thing("a", "n", True, seen, (Dependency("parent", False, ("v",)),))
    db.execute(table.upsert, table.values(thing))
    assert table.from_row(db.execute("SELECT * FROM things").fetchone()) == thing
    changed = attrs.evolve(thing, note=None, active=False, needs=())
    db.execute(table.upsert, table.values(changed))  # the same key: an update
    rows = db.execute("SELECT * FROM things").fetchall()
    assert [table.from_row(row) for row in rows] == [changed]


def test_the_flags_table_keeps_every_field_of_a_flag_and_never_rewrites_its_creation() -> None:
    assert [c.attribute for c in FLAGS.columns] == [f.name for f in attrs.fields(FlagDefinition)]
    assert "created_at = excluded.created_at" not in FLAGS.upsert
    assert "description = excluded.description" in FLAGS.upsert


def test_every_table_but_the_ones_with_their_own_queries_is_kept_generically() -> None:
    own_queries = {"strategies", "action_sets", "action_set_events"}
    assert set(ROWS) == {table.name for table in tables.TABLES} - own_queries


def test_a_document_table_keeps_every_field_in_one_json_column_so_fields_need_no_migration() -> (
    None
):
    table = EntityTable(Table(_Thing, "things", key=("name",), order=("name",)), document="body")
    db = sqlite3.connect(":memory:")
    db.row_factory = sqlite3.Row
    db.execute("CREATE TABLE things (name TEXT PRIMARY KEY, body TEXT NOT NULL)")
    seen = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    thing = _Thing("a", "n", True, seen, (Dependency("parent", False, ("v",)),))
    db.execute(table.upsert, table.values(thing))
    db.execute(table.upsert, table.values(attrs.evolve(thing, note="changed")))
    rows = db.execute("SELECT * FROM things").fetchall()
    assert [table.from_row(row) for row in rows] == [attrs.evolve(thing, note="changed")]
