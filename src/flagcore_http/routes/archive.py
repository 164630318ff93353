"""The archive: list archived flags, revive, delete for good."""

from __future__ import annotations

from aiohttp import web

from flagcore.wire import ArchivedFlagAnswer, ArchivedFlagsAnswer
from flagcore_http.answering import answered
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented

__all__ = ["routes"]

routes = web.RouteTableDef()


@routes.get("/api/admin/archive/features")
@documented({200: ArchivedFlagsAnswer})
async def archived(request: web.Request) -> web.Response:
    flags = await call(request, service(request).archive.list_archived_flags)
    return answered(ArchivedFlagsAnswer(1, tuple(map(ArchivedFlagAnswer.of_details, flags))))


@routes.get("/api/admin/archive/features/{project}")
@documented({200: ArchivedFlagsAnswer})
async def archived_in_project(request: web.Request) -> web.Response:
    flags = await call(
        request, service(request).archive.list_archived_flags, request.match_info["project"]
    )
    return answered(ArchivedFlagsAnswer(1, tuple(map(ArchivedFlagAnswer.of_details, flags))))


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
