"""The change log: every change any part makes writes one event (see
`ServiceContext.record_event`); this part reads them back."""

from __future__ import annotations

from flagcore.entities import Event
from flagcore.service.context import ServiceContext

__all__ = ["EventLog"]


class EventLog:
    def __init__(self, context: ServiceContext) -> None:
        self._context = context

    def list_events(
        self, *, limit: int = 100, before_id: int | None = None, feature_name: str | None = None
    ) -> list[Event]:
        """The change log, newest first."""
        with self._context.read() as tx:
            return list(tx.list_events(limit=limit, before_id=before_id, feature_name=feature_name))
