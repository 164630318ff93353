"""Segments, and the links between segments and strategies."""

from __future__ import annotations

from aiohttp import web

from flagcore.wire import (
    PlacementAnswer,
    SegmentAnswer,
    SegmentsAnswer,
    SegmentsWithUsageAnswer,
    SegmentWithUsageAnswer,
    StrategiesUsingAnswer,
    StrategySegmentsAnswer,
)
from flagcore_http import shapes
from flagcore_http.answering import answered
from flagcore_http.bodies import as_keywords, int_parameter, read_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented
from flagcore_http.wire import SegmentBody, StrategySegments

__all__ = ["routes"]

routes = web.RouteTableDef()

# What can follow a created segment (OpenAPI links, for stateful tests).
_CREATED = {"id": "$response.body#/id"}


@routes.get("/api/admin/segments")
@documented({200: SegmentsWithUsageAnswer})
async def list_segments(request: web.Request) -> web.Response:
    segments = await call(request, service(request).segments.list_segment_details)
    return answered(
        SegmentsWithUsageAnswer(tuple(map(SegmentWithUsageAnswer.of_details, segments)))
    )


@routes.post("/api/admin/segments")
@documented(
    {201: SegmentAnswer},
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
        **as_keywords(body),
        actor=actor(request),
    )
    return answered(
        SegmentAnswer.of(segment), status=201, headers={"Location": f"segments/{segment.id}"}
    )


@routes.get("/api/admin/segments/{id}")
@documented({200: SegmentAnswer}, path={"id": shapes.ID})
async def get_segment(request: web.Request) -> web.Response:
    segment = await call(
        request, service(request).segments.get_segment_definition, int_parameter(request, "id")
    )
    return answered(SegmentAnswer.of(segment))


@routes.put("/api/admin/segments/{id}")
@documented({204: None}, body=SegmentBody, errors=(409,), path={"id": shapes.ID})
async def update_segment(request: web.Request) -> web.Response:
    segment_id = int_parameter(request, "id")
    body = await read_body(request, SegmentBody)
    await call(
        request,
        service(request).segments.update_segment,
        segment_id,
        **as_keywords(body),
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
@documented({200: StrategiesUsingAnswer}, path={"id": shapes.ID})
async def strategies_using(request: web.Request) -> web.Response:
    usage = await call(
        request, service(request).segments.segment_usage, int_parameter(request, "id")
    )
    return answered(StrategiesUsingAnswer(tuple(PlacementAnswer.of(p, o) for p, o in usage)))


@routes.get("/api/admin/segments/strategies/{strategy_id}")
@documented({200: SegmentsAnswer})
async def segments_of_strategy(request: web.Request) -> web.Response:
    segments = await call(
        request, service(request).segments.segments_of_strategy, request.match_info["strategy_id"]
    )
    return answered(SegmentsAnswer(tuple(map(SegmentAnswer.of, segments))))


@routes.post("/api/admin/segments/strategies")
@documented({201: StrategySegmentsAnswer}, body=StrategySegments, errors=(404,))
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
    return answered(
        StrategySegmentsAnswer(
            body.project_id, body.strategy_id, body.environment_id, body.segment_ids
        ),
        status=201,
        headers={"Location": f"strategies/{body.strategy_id}"},
    )
