"""The archive: list archived flags, revive, delete for good."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from flagcore.entities import FlagDetails
from flagcore.wire import converter
from flagcore_http import render, shapes
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented

__all__ = ["routes"]

routes = web.RouteTableDef()


def _archived(details: FlagDetails) -> dict[str, Any]:
    first = next((s for e in details.environments for s in e.strategies), None)
    return {
        **render.flag(details.flag),
        "variants": converter.unstructure(
            next((e.variants for e in details.environments if e.variants), ())
        ),
        "tags": [{"type": t.type, "value": t.value} for t in details.tags],
        "strategy": first.name if first else "default",
        "parameters": dict(first.parameters) if first else {},
    }


@routes.get("/api/admin/archive/features")
@documented({200: shapes.ARCHIVED_FLAGS})
async def archived(request: web.Request) -> web.Response:
    flags = await call(request, service(request).archive.list_archived_flags)
    return web.json_response({"version": 1, "features": [_archived(d) for d in flags]})


@routes.get("/api/admin/archive/features/{project}")
@documented({200: shapes.ARCHIVED_FLAGS})
async def archived_in_project(request: web.Request) -> web.Response:
    flags = await call(
        request, service(request).archive.list_archived_flags, request.match_info["project"]
    )
    return web.json_response({"version": 1, "features": [_archived(d) for d in flags]})


@routes.post("/api/admin/archive/revive/{name}")
@documented({200: None}, errors=(409,))
async def revive(request: web.Request) -> web.Response:
    await call(
        request,
        service(request).archive.revive_flag,
        request.match_info["name"],
        actor=actor(request),
    )
    return web.Response(status=200)


@routes.delete("/api/admin/archive/{name}")
@documented({200: None})
async def delete_for_good(request: web.Request) -> web.Response:
    await call(
        request,
        service(request).archive.delete_flag,
        request.match_info["name"],
        actor=actor(request),
    )
    return web.Response(status=200)
