"""Liveness and readiness; no authentication."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from aiohttp import web

from flagcore.errors import FlagcoreError
from flagcore_http import shapes
from flagcore_http.calls import call, service
from flagcore_http.contract import documented

__all__ = ["routes"]

routes = web.RouteTableDef()


@runtime_checkable
class _ReportsAvailability(Protocol):
    """A store that knows whether its database answers (the PostgreSQL store), without a
    query: its `revision()` is answered from memory, so it proves nothing about the database."""

    @property
    def available(self) -> bool: ...


@routes.get("/health")
@documented({200: shapes.HEALTH}, store=False)
async def health(request: web.Request) -> web.Response:
    return web.json_response({"health": "GOOD"})


@routes.get("/ready")
@documented({200: shapes.HEALTH, 503: shapes.HEALTH})
async def ready(request: web.Request) -> web.Response:
    """Ready when the store answers (one cheap read), or says its database is reachable."""
    store = service(request).store
    if isinstance(store, _ReportsAvailability) and not store.available:
        return web.json_response(
            {
                "health": "BAD",
                "message": "the database is unavailable; SDKs are served from memory and "
                "writes are refused until it is back",
            },
            status=503,
        )
    try:
        await call(request, store.revision)
    except FlagcoreError as error:
        return web.json_response({"health": "BAD", "message": error.message}, status=503)
    return web.json_response({"health": "GOOD"})
