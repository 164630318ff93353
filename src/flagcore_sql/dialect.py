"""`Dialect`: what the shared SQL leaves to each database, as plain strings.

The shared queries are written with ``?`` placeholders and standard SQL that SQLite
(3.35+) and PostgreSQL both accept: ``INSERT ... ON CONFLICT (...) DO UPDATE`` upserts,
``ON CONFLICT DO NOTHING``, ``RETURNING id`` for ids the database allocates. JSON is kept
as text in both (rule bodies are Unleash's wire JSON, written and read by
`flagcore.codec`; the stores never query inside it), so no JSON functions are needed.
The rest differs and lives here. Locking (SQLite ``BEGIN IMMEDIATE``, PostgreSQL
transactions and advisory locks) is the adapter's, not the dialect's.
"""

from __future__ import annotations

import functools

import attrs

__all__ = ["SQLITE", "Dialect"]


@attrs.frozen
class Dialect:
    """One database's spelling of the few things the shared SQL cannot say one way."""

    name: str
    placeholder: str
    """What the driver takes for a parameter: ``?`` (sqlite3) or ``%s`` (psycopg)."""
    serial_primary_key: str
    """An integer primary key the database allocates, growing, never reused."""
    big_integer: str
    """A 64-bit integer column (ids, metric counts)."""
    boolean: str
    row_id: str
    """The physical row id a bounded ``DELETE`` picks its rows by (``rowid``, ``ctid``)."""
    saturating_sum_template: str
    """``{a} + {b}``, stopping at 2**63 - 1 instead of overflowing."""

    def sql(self, text: str) -> str:
        """``text`` (written with ``?`` placeholders) as this database's driver takes it."""
        if self.placeholder == "?":
            return text
        return _replace_placeholders(text, self.placeholder)

    def saturating_sum(self, a: str, b: str) -> str:
        return self.saturating_sum_template.format(a=a, b=b)

    def ddl(self, text: str) -> str:
        """A schema statement written with ``{serial}``, ``{bigint}`` and ``{bool}``."""
        return text.format(
            serial=self.serial_primary_key,
            bigint=self.big_integer,
            bool=self.boolean,
        )


@functools.lru_cache(maxsize=512)
def _replace_placeholders(text: str, placeholder: str) -> str:
    # The shared SQL has no ``?`` or ``%`` inside literals, so a plain replace is exact;
    # a literal ``%`` would need doubling for psycopg, and there is none.
    return text.replace("?", placeholder)


SQLITE = Dialect(
    name="sqlite",
    placeholder="?",
    # These spell the schema exactly as flagcore_store_sqlite shipped it before the
    # shared layer: a database made by either has the same tables.
    serial_primary_key="INTEGER PRIMARY KEY AUTOINCREMENT",
    big_integer="INTEGER",
    boolean="INTEGER",
    row_id="rowid",
    # SQLite turns an overflowing integer sum into a REAL; min() then keeps the cap.
    saturating_sum_template="min({a} + {b}, 9223372036854775807)",
)
