"""Liveness and readiness; no authentication."""

from __future__ import annotations

from aiohttp import web

from flagcore.errors import FlagcoreError
from flagcore_http.calls import call, service

__all__ = ["routes"]

routes = web.RouteTableDef()


@routes.get("/health")
async def health(request: web.Request) -> web.Response:
    return web.json_response({"health": "GOOD"})


@routes.get("/ready")
async def ready(request: web.Request) -> web.Response:
    """Ready when the store answers (one cheap read)."""
    try:
        await call(request, service(request).store.revision)
    except FlagcoreError as error:
        return web.json_response({"health": "BAD", "message": error.message}, status=503)
    return web.json_response({"health": "GOOD"})
