"""`flagcore.ports.RetentionDeletes`: bounded deletes, oldest first."""

from __future__ import annotations

import datetime as dt
from typing import Any

from flagcore_sql import mapping
from flagcore_sql.parts.base import SqlPart

__all__ = ["RetentionQueries"]


class RetentionQueries(SqlPart):
    """The queries of `flagcore.ports.RetentionDeletes`."""

    def _delete_oldest(self, table: str, where: str, order: str, params: list[Any]) -> int:
        """Delete the first rows of ``table`` (by ``order``) matching ``where``; the last
        parameter is the LIMIT. Uses the indexes of migration m006, so a batch is cheap."""
        row_id = self._dialect.row_id
        return self._run(
            f"DELETE FROM {table} WHERE {row_id} IN "
            f"(SELECT {row_id} FROM {table} WHERE {where} ORDER BY {order} LIMIT ?)",
            params,
        )

    def delete_flag_metrics_before(self, hour: dt.datetime, limit: int) -> int:
        return self._delete_oldest(
            "flag_metrics", "hour < ?", "hour", [mapping.time_text(hour), limit]
        )

    def delete_daily_flag_metrics_before(self, day: dt.datetime, limit: int) -> int:
        return self._delete_oldest(
            "flag_metrics_daily", "hour < ?", "hour", [mapping.time_text(day), limit]
        )

    def delete_client_instances_seen_before(self, time: dt.datetime, limit: int) -> int:
        return self._delete_oldest(
            "client_instances", "last_seen < ?", "last_seen", [mapping.time_text(time), limit]
        )

    def delete_signals_before(self, time: dt.datetime, limit: int) -> int:
        return self._delete_oldest(
            "signals", "created_at < ?", "id", [mapping.time_text(time), limit]
        )

    def delete_signals_beyond_newest(self, endpoint_id: int, keep: int, limit: int) -> int:
        return self._delete_oldest(
            "signals",
            "endpoint_id = ? AND id < coalesce((SELECT id FROM signals WHERE endpoint_id = ? "
            "ORDER BY id DESC LIMIT 1 OFFSET ?), -1)",
            "id",
            [endpoint_id, endpoint_id, max(0, keep - 1), limit],
        )

    def delete_events_before(self, time: dt.datetime, limit: int) -> int:
        return self._delete_oldest(
            "events",
            "created_at < ? AND id < (SELECT max(id) FROM events)",
            "id",
            [mapping.time_text(time), limit],
        )
