"""Copy every row of one SQL store into another, ids and revision kept (``flagcore copy``).

Both sides have the same tables (the shared migrations), so the copy goes table by table,
row by row, columns by name, ids as they are: projects, environments, flags with every
environment's state and strategies, segments, tags and tag types, strategy definitions,
API tokens, signal endpoints with their tokens and signals, action sets and their
executions, events (so the revision, the newest event id, is the same), SDK instances
and metrics. It is done at the table level rather than through the port's ``create_*``
methods because those allocate new ids by design, and the copy must keep them.

Booleans are the one type the databases spell differently (SQLite integers, PostgreSQL
``BOOLEAN``): values are normalised for the digest and converted for the target by the
target dialect. After writing explicit ids the target's id generators are moved past
them (`Dialect.reset_serial`), so the next allocated id grows on from the copied ones.
"""

from __future__ import annotations

import hashlib
import typing
from collections.abc import Callable, Sequence
from typing import Any

import orjson

from flagcore import tables
from flagcore_sql.dialect import Dialect
from flagcore_sql.session import SqlSession
from flagcore_sql.tables import ROWS
from flagcore_sql.transaction import SqlTransaction

__all__ = ["BOOLEAN_COLUMNS", "TABLES", "clear", "copy_rows", "counts", "digest", "is_empty"]

_LINKS = {"strategies": ("strategy_segments",)}
"""Tables only the SQL stores have, copied after the table whose rows they link."""
_OWN_TABLES = ("flag_metrics", "client_instances", "flag_metrics_daily")
"""The metrics part's tables (not `flagcore.tables` entities)."""


def _serial(table: tables.Table[Any]) -> bool:
    """Whether the database allocates ``table``'s ids: one integer key."""
    if len(table.key) != 1 or any(path == table.key[0] for _t, path in table.deleted_with):
        return False  # several paths, or another table's id (a user's password)
    kind: Any = table.entity
    for name in table.key[0].split("."):
        kind = typing.get_type_hints(kind).get(name)  # None: a property (strategies' id)
    return kind is int


# Every table of the schema, parents before the tables that reference them (the order of
# `flagcore.tables.TABLES`), and whether it has a serial id. A test checks this list
# against a freshly migrated database, so a migration that adds a table the port does not
# describe cannot be forgotten.
TABLES: tuple[tuple[str, bool], ...] = (
    *(
        entry
        for table in tables.TABLES
        for entry in (
            (table.name, _serial(table)),
            *((t, False) for t in _LINKS.get(table.name, ())),
        )
    ),
    *((name, False) for name in _OWN_TABLES),
)
BOOLEAN_COLUMNS = frozenset(
    {c.name for rows in ROWS.values() for c in rows.columns if c.boolean} | {"disabled"}
)
"""The columns spelled ``{bool}`` in the migrations (the same names in every table):
those of the generic tables, and strategies' ``disabled`` (their own queries)."""

Progress = Callable[[str, int, int], None]
"""``progress(table, rows_done, rows_total)``, called as the copy goes."""


def _session(tx: SqlTransaction) -> tuple[SqlSession, Dialect]:
    return tx._session, tx._dialect


def _table_rows(tx: SqlTransaction, table: str) -> list[Any]:
    session, _dialect = _session(tx)
    return session.rows(f"SELECT * FROM {table}")


def counts(tx: SqlTransaction) -> dict[str, int]:
    """Rows per table."""
    session, _dialect = _session(tx)
    return {table: int(session.rows(f"SELECT count(*) FROM {table}")[0][0]) for table, _ in TABLES}


def is_empty(tx: SqlTransaction) -> bool:
    return not any(counts(tx).values())


def _normal(value: Any) -> Any:
    return int(value) if isinstance(value, bool) else value


def _canonical(row: Any) -> bytes:
    names: list[str] = row.keys()  # a row iterates over its values, not its names
    return orjson.dumps(sorted((name, _normal(row[name])) for name in names))


def digest(tx: SqlTransaction) -> str:
    """A SHA-256 of every row of every table, the same for equal contents on SQLite and
    PostgreSQL: rows sorted as canonical JSON in Python (the databases' text collations
    differ), booleans read as 0 and 1."""
    hasher = hashlib.sha256()
    for table, _serial in TABLES:
        hasher.update(table.encode())
        for encoded in sorted(_canonical(row) for row in _table_rows(tx, table)):
            hasher.update(encoded)
    return hasher.hexdigest()


def clear(tx: SqlTransaction) -> None:
    """Delete every row of every table, children first (``--force`` on a non-empty target)."""
    session, _dialect = _session(tx)
    for table, _serial in reversed(TABLES):
        session.run(f"DELETE FROM {table}")


def copy_rows(
    source: SqlTransaction, target: SqlTransaction, progress: Progress | None = None
) -> dict[str, int]:
    """Every row of ``source`` into ``target`` (which should be empty); rows per table."""
    session, dialect = _session(target)
    total = sum(counts(source).values())
    done = 0
    copied: dict[str, int] = {}
    for table, serial in TABLES:
        rows = _table_rows(source, table)
        copied[table] = len(rows)
        if rows:
            columns = list(rows[0].keys())
            booleans = [c in BOOLEAN_COLUMNS for c in columns]
            statement = dialect.sql(
                f"INSERT INTO {table} ({', '.join(columns)}) "
                f"VALUES ({', '.join('?' for _ in columns)})"
            )
            for row in rows:
                session.run(statement, _values(row, booleans, dialect))
                done += 1
                if progress is not None and done % 200 == 0:
                    progress(table, done, total)
        if serial and dialect.reset_serial_template:
            session.rows(dialect.reset_serial_template.format(table=table))
        if progress is not None:
            progress(table, done, total)
    return copied


def _values(row: Sequence[Any], booleans: list[bool], dialect: Dialect) -> list[Any]:
    if dialect.boolean != "BOOLEAN":
        return [_normal(v) for v in row]
    return [
        bool(v) if is_bool and v is not None else v
        for v, is_bool in zip(row, booleans, strict=True)
    ]
