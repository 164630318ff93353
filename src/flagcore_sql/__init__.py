"""SQL shared by flagcore's SQL stores: the schema, the queries, and row ↔ model mapping.

Written once, in SQL both SQLite and PostgreSQL accept; what differs between them goes
through a narrow seam, so a store on a new database is a small adapter:

- `flagcore_sql.dialect.Dialect`: placeholders, column types, the saturating sum of
  metric counts, the physical row id retention deletes by (pure strings, no driver);
- `flagcore_sql.session.SqlSession`: how the adapter runs one statement inside the open
  transaction (and turns its driver's errors into `flagcore.errors`).

`flagcore_sql.schema.MIGRATIONS` is the schema as named, ordered migrations (each
applied once; the adapter records which, e.g. sqlite-utils ``_sqlite_migrations``), and
`flagcore_sql.transaction.SqlTransaction` implements `flagcore.ports.Transaction` over a
session. Transactions themselves (BEGIN, locking, retries, commit) stay with the adapter.
This package imports no driver; it needs orjson, as the SQL stores do.
"""

from flagcore_sql.dialect import POSTGRESQL, SQLITE, Dialect
from flagcore_sql.schema import MIGRATIONS, Migration
from flagcore_sql.session import SqlSession
from flagcore_sql.transaction import SqlTransaction

__all__ = [
    "MIGRATIONS",
    "POSTGRESQL",
    "SQLITE",
    "Dialect",
    "Migration",
    "SqlSession",
    "SqlTransaction",
]
