"""Environments, strategy definitions and the event log."""

from __future__ import annotations

import attrs
from aiohttp import web

from flagcore.entities import Environment, StrategyDefinition
from flagcore.wire import (
    INT64_MAX,
    EnvironmentsAnswer,
    EventsAnswer,
    StrategyDefinitionAnswer,
    StrategyDefinitionsAnswer,
)
from flagcore_http import shapes
from flagcore_http.answering import answered
from flagcore_http.bodies import query_int, read_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import Parameter, documented
from flagcore_http.wire import CreateEnvironment, CreateStrategyDefinition

__all__ = ["routes"]

routes = web.RouteTableDef()


@routes.get("/api/admin/environments")
@documented({200: EnvironmentsAnswer})
async def list_environments(request: web.Request) -> web.Response:
    environments = await call(request, service(request).environments.list_environments)
    return answered(EnvironmentsAnswer(1, tuple(environments)))


@routes.post("/api/admin/environments")
@documented({201: Environment}, body=CreateEnvironment, errors=(409,))
async def create_environment(request: web.Request) -> web.Response:
    body = await read_body(request, CreateEnvironment)
    created = await call(
        request,
        service(request).environments.create_environment,
        body.name,
        body.type,
        body.sort_order,
        actor=actor(request),
    )
    return answered(attrs.evolve(created, enabled=True), status=201)


@routes.get("/api/admin/strategies")
@documented({200: StrategyDefinitionsAnswer})
async def list_strategy_definitions(request: web.Request) -> web.Response:
    definitions = await call(
        request, service(request).strategy_definitions.list_strategy_definitions
    )
    return answered(
        StrategyDefinitionsAnswer(1, tuple(map(StrategyDefinitionAnswer.of, definitions)))
    )


@routes.post("/api/admin/strategies")
@documented({201: StrategyDefinitionAnswer}, body=CreateStrategyDefinition, errors=(409,))
async def create_strategy_definition(request: web.Request) -> web.Response:
    body = await read_body(request, CreateStrategyDefinition)
    created = await call(
        request,
        service(request).strategy_definitions.create_strategy_definition,
        StrategyDefinition(body.name, body.description, body.parameters, title=body.title),
        actor=actor(request),
    )
    return answered(StrategyDefinitionAnswer.of(created), status=201)


@routes.get("/api/admin/events")
@documented(
    {200: EventsAnswer},
    query={
        "limit": Parameter(shapes.whole(1, 1000)),
        "before": Parameter(shapes.whole(0)),
        "feature": Parameter(shapes.STRING),
    },
)
async def list_events(request: web.Request) -> web.Response:
    limit = query_int(request, "limit", 100, 1, 1000) or 100
    before = query_int(request, "before", None, 0, INT64_MAX)
    feature = request.query.get("feature")
    events = await call(
        request,
        service(request).events.list_events,
        limit=limit,
        before_id=before,
        feature_name=feature,
    )
    return answered(EventsAnswer(2, tuple(events)))
