"""`flagcore.ports.EventLog`: the change log, newest id the revision."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import orjson

from flagcore.entities import (
    Event,
)
from flagcore_sql import mapping
from flagcore_sql.parts.base import SqlPart

__all__ = ["EventLogQueries"]


class EventLogQueries(SqlPart):
    """The queries of `flagcore.ports.EventLog`."""

    def append_event(
        self,
        type: str,
        created_by: str,
        *,
        feature_name: str | None = None,
        project: str | None = None,
        environment: str | None = None,
        data: Any = None,
        pre_data: Any = None,
    ) -> Event:
        created_at = dt.datetime.now(dt.UTC)
        event_id = self._insert(
            "INSERT INTO events (type, created_by, created_at, feature_name, project, "
            "environment, data, pre_data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                type,
                created_by,
                mapping.time_text(created_at),
                feature_name,
                project,
                environment,
                None if data is None else mapping.dumps(data),
                None if pre_data is None else mapping.dumps(pre_data),
            ],
        )
        return Event(
            event_id,
            type,
            created_by,
            created_at,
            feature_name,
            project,
            environment,
            data,
            pre_data,
        )

    def list_events(
        self, *, limit: int = 100, before_id: int | None = None, feature_name: str | None = None
    ) -> Sequence[Event]:
        where_sql, params = mapping.where({"id < ?": before_id, "feature_name = ?": feature_name})
        rows = self._rows(
            f"SELECT * FROM events WHERE {where_sql} ORDER BY id DESC LIMIT ?",
            [*params, limit],
        )
        return [
            Event(
                row["id"],
                row["type"],
                row["created_by"],
                mapping.required_time(row["created_at"]),
                row["feature_name"],
                row["project"],
                row["environment"],
                None if row["data"] is None else orjson.loads(row["data"]),
                None if row["pre_data"] is None else orjson.loads(row["pre_data"]),
            )
            for row in rows
        ]
