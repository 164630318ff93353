"""Liveness and readiness; no authentication (docs/operations.md).

``/health`` is liveness only: the process answers HTTP. It touches nothing else, so a
database outage never makes an orchestrator restart a node that still serves SDKs.
``/ready`` is readiness: the store answers a real read, and a store that keeps a
connection of its own to learn of changes (PostgreSQL's notification listener) has it.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from aiohttp import web

from flagcore.errors import FlagcoreError
from flagcore.ports import Store
from flagcore.wire import HealthAnswer
from flagcore_http.answering import answered
from flagcore_http.calls import call, service
from flagcore_http.contract import documented

__all__ = ["routes"]

routes = web.RouteTableDef()


@runtime_checkable
class _ReportsAvailability(Protocol):
    """A store that knows whether its database answers (the PostgreSQL store: its
    notification listener's connection is up), without a query."""

    @property
    def available(self) -> bool: ...


_GOOD = HealthAnswer("GOOD")


@routes.get("/health")
@documented({200: HealthAnswer}, store=False)
async def health(request: web.Request) -> web.Response:
    return answered(_GOOD)


def _read_once(store: Store) -> None:
    """One cheap query that reaches the database (``revision()`` may answer from memory):
    the environments, a handful of rows."""
    with store.transaction(write=False) as tx:
        tx.list_environments()


@routes.get("/ready")
@documented({200: HealthAnswer, 503: HealthAnswer})
async def ready(request: web.Request) -> web.Response:
    """Ready when the listener (if any) is connected and the store answers one read."""
    store = service(request).store
    if isinstance(store, _ReportsAvailability) and not store.available:
        return answered(
            HealthAnswer(
                "BAD",
                "the database is unavailable; SDKs are served from memory and "
                "writes are refused until it is back",
            ),
            status=503,
        )
    try:
        await call(request, _read_once, store)
    except FlagcoreError as error:
        return answered(HealthAnswer("BAD", error.message), status=503)
    return answered(_GOOD)
