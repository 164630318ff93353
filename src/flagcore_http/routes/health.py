"""Liveness and readiness; no authentication (docs/operations.md).

``/health`` is liveness only: the process answers HTTP. It touches nothing else, so a
database outage never makes an orchestrator restart a node that still serves SDKs.
``/ready`` is readiness: the store answers a real read, and a store that keeps a
connection of its own to learn of changes (PostgreSQL's notification listener) has it.
"""

from __future__ import annotations

from aiohttp import web

from flagcore.errors import FlagcoreError
from flagcore_http import shapes
from flagcore_http.calls import call, service
from flagcore_http.contract import documented

__all__ = ["routes"]

routes = web.RouteTableDef()


@routes.get("/health")
@documented({200: shapes.HEALTH}, store=False)
async def health(request: web.Request) -> web.Response:
    return web.json_response({"health": "GOOD"})


@routes.get("/ready")
@documented({200: shapes.HEALTH, 503: shapes.HEALTH})
async def ready(request: web.Request) -> web.Response:
    """Ready when the listener (if any) is connected and the store answers one read."""
    storage = service(request).storage
    if not storage.available():
        return web.json_response(
            {
                "health": "BAD",
                "message": "the database is unavailable; SDKs are served from memory and "
                "writes are refused until it is back",
            },
            status=503,
        )
    try:
        await call(request, storage.check)
    except FlagcoreError as error:
        return web.json_response({"health": "BAD", "message": error.message}, status=503)
    return web.json_response({"health": "GOOD"})
