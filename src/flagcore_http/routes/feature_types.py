"""Flag types and their expected lifetimes on Unleash's paths (issue 32):
``GET /api/admin/feature-types``, ``PUT /api/admin/feature-types/<id>/lifetimes``."""

from __future__ import annotations

from aiohttp import web

from flagcore.service import FeatureType
from flagcore.wire import FeatureTypeAnswer, FeatureTypesAnswer
from flagcore_http.answering import answered
from flagcore_http.bodies import read_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented
from flagcore_http.wire import LifetimeBody

__all__ = ["routes"]

routes = web.RouteTableDef()

FEATURE_TYPES = "/api/admin/feature-types"


def _answer(feature_type: FeatureType) -> FeatureTypeAnswer:
    return FeatureTypeAnswer(
        feature_type.id, feature_type.name, feature_type.description, feature_type.lifetime_days
    )


@routes.get(FEATURE_TYPES)
@documented({200: FeatureTypesAnswer})
async def list_feature_types(request: web.Request) -> web.Response:
    types = await call(request, service(request).feature_types.list_feature_types)
    return answered(FeatureTypesAnswer(1, tuple(map(_answer, types))))


@routes.put(FEATURE_TYPES + "/{id}/lifetimes")
@documented({200: FeatureTypeAnswer}, body=LifetimeBody)
async def set_type_lifetime(request: web.Request) -> web.Response:
    """A flag of this type older than its lifetime is potentially stale (0: never)."""
    body = await read_body(request, LifetimeBody)
    changed = await call(
        request,
        service(request).feature_types.set_type_lifetime,
        request.match_info["id"],
        body.lifetime_days,
        actor=actor(request),
    )
    return answered(_answer(changed))
