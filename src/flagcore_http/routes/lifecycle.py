"""A flag's lifecycle on Unleash 7's paths (issue 32): ``GET …/features/<f>/lifecycle``,
``POST …/lifecycle/complete`` and ``…/lifecycle/uncomplete`` (200, no body, as Unleash)."""

from __future__ import annotations

from aiohttp import web

from flagcore.wire import FlagStageAnswer, write_answer
from flagcore_http.bodies import read_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented
from flagcore_http.wire import CompleteFlagBody

__all__ = ["routes"]

routes = web.RouteTableDef()

LIFECYCLE = "/api/admin/projects/{project}/features/{name}/lifecycle"


@routes.get(LIFECYCLE)
@documented({200: tuple[FlagStageAnswer, ...]})
async def flag_lifecycle(request: web.Request) -> web.Response:
    """Every stage the flag entered, oldest first, with when and how long it spent there."""
    timeline = await call(
        request,
        service(request).lifecycle.lifecycle_timeline,
        request.match_info["project"],
        request.match_info["name"],
    )
    return web.json_response(
        [write_answer(FlagStageAnswer.of(timed.stage, timed.spent)) for timed in timeline]
    )


@routes.post(LIFECYCLE + "/complete")
@documented({200: None}, body=CompleteFlagBody)
async def complete_flag(request: web.Request) -> web.Response:
    body = await read_body(request, CompleteFlagBody)
    await call(
        request,
        service(request).lifecycle.complete_flag,
        request.match_info["project"],
        request.match_info["name"],
        body.status,
        body.status_value,
        actor=actor(request),
    )
    return web.Response(status=200)


@routes.post(LIFECYCLE + "/uncomplete")
@documented({200: None})
async def uncomplete_flag(request: web.Request) -> web.Response:
    await call(
        request,
        service(request).lifecycle.uncomplete_flag,
        request.match_info["project"],
        request.match_info["name"],
        actor=actor(request),
    )
    return web.Response(status=200)
