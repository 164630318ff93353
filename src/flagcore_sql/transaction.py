"""`SqlTransaction`: every query of the port, written once for SQLite and PostgreSQL.

Its parts (`flagcore_sql.parts`) follow the parts of `flagcore.ports`, one module each.
Reads are shaped for client snapshots: one environment is read in a handful of queries
(flags, their state there, their strategies, all the strategies' segment references,
the segments), never a query per flag or per strategy, and rule JSON is parsed with
orjson and read by the wire's fast readers. Row ↔ model mapping is in
`flagcore_sql.mapping`; what differs between databases is in `flagcore_sql.dialect`.
"""

from __future__ import annotations

from flagcore_sql.parts.actions import ActionQueries
from flagcore_sql.parts.events import EventLogQueries
from flagcore_sql.parts.flags import FlagQueries
from flagcore_sql.parts.metrics import MetricsQueries
from flagcore_sql.parts.projects import ProjectQueries
from flagcore_sql.parts.retention import RetentionQueries
from flagcore_sql.parts.segments import SegmentQueries
from flagcore_sql.parts.signals import SignalQueries
from flagcore_sql.parts.strategies import StrategyQueries
from flagcore_sql.parts.strategy_definitions import StrategyDefinitionQueries
from flagcore_sql.parts.tags import TagQueries
from flagcore_sql.parts.tokens import TokenQueries

__all__ = ["SqlTransaction"]


class SqlTransaction(
    EventLogQueries,
    ProjectQueries,
    FlagQueries,
    StrategyQueries,
    SegmentQueries,
    StrategyDefinitionQueries,
    TagQueries,
    TokenQueries,
    SignalQueries,
    ActionQueries,
    MetricsQueries,
    RetentionQueries,
):
    """`flagcore.ports.Transaction` in SQL, over the transaction an adapter has open.

    Every statement goes through the adapter's `flagcore_sql.SqlSession` (its driver,
    with its errors translated) after `flagcore_sql.Dialect.sql`.
    """
