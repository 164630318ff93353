"""`SqlTransaction`: every query of the port, written once for SQLite and PostgreSQL.

The generic keyed repository (`flagcore_sql.parts.records`, over the `EntityTable` of
each table in `flagcore_sql.tables`) keeps most entities, and
`flagcore.repositories.KeptEntities` writes the port's named methods over it. The parts
that remain (`flagcore_sql.parts`) are the ones kept their own way: strategies with their
segment links, action sets as JSON bodies of their own shape, metric buckets and
SDK instances (counts that add up, merges) and retention's bounded deletes.
Reads are shaped for client snapshots: one environment is read in a handful of queries
(flags, their state there, their strategies, all the strategies' segment references,
the segments), never a query per flag or per strategy, and rule JSON is parsed with
orjson and read by the wire's fast readers. What differs between databases is in
`flagcore_sql.dialect`.
"""

from __future__ import annotations

from flagcore.repositories import KeptEntities
from flagcore_sql.parts.actions import ActionQueries
from flagcore_sql.parts.metrics import MetricsQueries
from flagcore_sql.parts.records import RecordQueries
from flagcore_sql.parts.retention import RetentionQueries
from flagcore_sql.parts.strategies import StrategyQueries

__all__ = ["SqlTransaction"]


class SqlTransaction(
    StrategyQueries,
    ActionQueries,
    MetricsQueries,
    RetentionQueries,
    RecordQueries,
    KeptEntities,
):
    """`flagcore.ports.Transaction` in SQL, over the transaction an adapter has open.

    Every statement goes through the adapter's `flagcore_sql.SqlSession` (its driver,
    with its errors translated) after `flagcore_sql.Dialect.sql`.
    """
