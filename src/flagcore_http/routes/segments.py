"""Segments, and the links between segments and strategies."""

from __future__ import annotations

from aiohttp import web

from flagcore_http import render, shapes
from flagcore_http.bodies import int_parameter, read_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented
from flagcore_http.wire import SegmentBody, StrategySegments

__all__ = ["routes"]

routes = web.RouteTableDef()

# What can follow a created segment (OpenAPI links, for stateful tests).
_CREATED = {"id": "$response.body#/id"}


@routes.get("/api/admin/segments")
@documented({200: shapes.obj({"segments": shapes.array(shapes.SEGMENT_WITH_USAGE)})})
async def list_segments(request: web.Request) -> web.Response:
    segments = await call(request, service(request).segments.list_segment_details)
    return web.json_response({"segments": [render.segment_with_usage(s) for s in segments]})


@routes.post("/api/admin/segments")
@documented(
    {201: shapes.SEGMENT},
    body=SegmentBody,
    errors=(404, 409),
    links={
        "segments.get_segment": _CREATED,
        "segments.update_segment": _CREATED,
        "segments.delete_segment": _CREATED,
        "segments.strategies_using": _CREATED,
    },
)
async def create_segment(request: web.Request) -> web.Response:
    body = await read_body(request, SegmentBody)
    segment = await call(
        request,
        service(request).segments.define_segment,
        body.name,
        body.constraints,
        description=body.description,
        project=body.project,
        actor=actor(request),
    )
    return web.json_response(
        render.segment(segment), status=201, headers={"Location": f"segments/{segment.id}"}
    )


@routes.get("/api/admin/segments/{id}")
@documented({200: shapes.SEGMENT}, path={"id": shapes.ID})
async def get_segment(request: web.Request) -> web.Response:
    segment = await call(
        request, service(request).segments.get_segment_definition, int_parameter(request, "id")
    )
    return web.json_response(render.segment(segment))


@routes.put("/api/admin/segments/{id}")
@documented({204: None}, body=SegmentBody, errors=(409,), path={"id": shapes.ID})
async def update_segment(request: web.Request) -> web.Response:
    segment_id = int_parameter(request, "id")
    body = await read_body(request, SegmentBody)
    await call(
        request,
        service(request).segments.update_segment,
        segment_id,
        body.name,
        body.constraints,
        description=body.description,
        project=body.project,
        actor=actor(request),
    )
    return web.Response(status=204)


@routes.delete("/api/admin/segments/{id}")
@documented({204: None}, errors=(409,), path={"id": shapes.ID})
async def delete_segment(request: web.Request) -> web.Response:
    await call(
        request,
        service(request).segments.delete_segment,
        int_parameter(request, "id"),
        actor=actor(request),
    )
    return web.Response(status=204)


@routes.get("/api/admin/segments/{id}/strategies")
@documented({200: shapes.STRATEGIES_USING}, path={"id": shapes.ID})
async def strategies_using(request: web.Request) -> web.Response:
    usage = await call(
        request, service(request).segments.segment_usage, int_parameter(request, "id")
    )
    return web.json_response(
        {
            "strategies": [render.placement(p, project) for p, project in usage],
            "changeRequestStrategies": [],
        }
    )


@routes.get("/api/admin/segments/strategies/{strategy_id}")
@documented({200: shapes.obj({"segments": shapes.array(shapes.SEGMENT)})})
async def segments_of_strategy(request: web.Request) -> web.Response:
    segments = await call(
        request, service(request).segments.segments_of_strategy, request.match_info["strategy_id"]
    )
    return web.json_response({"segments": [render.segment(s) for s in segments]})


@routes.post("/api/admin/segments/strategies")
@documented({201: shapes.STRATEGY_SEGMENTS}, body=StrategySegments, errors=(404,))
async def replace_strategy_segments(request: web.Request) -> web.Response:
    body = await read_body(request, StrategySegments)
    await call(
        request,
        service(request).segments.replace_strategy_segments,
        body.strategy_id,
        body.segment_ids,
        project=body.project_id,
        environment=body.environment_id,
        actor=actor(request),
    )
    return web.json_response(
        {
            "projectId": body.project_id,
            "strategyId": body.strategy_id,
            "environmentId": body.environment_id,
            "segmentIds": list(body.segment_ids),
        },
        status=201,
        headers={"Location": f"strategies/{body.strategy_id}"},
    )
