"""Environments beyond listing and creating (`flagcore_http.routes.admin`): Unleash's
read one, update, sort order, on/off, delete and clone, and flagcore's own rename (Unleash
has none; docs/migrating-from-unleash.md)."""

from __future__ import annotations

from aiohttp import web

from flagcore.entities import Environment
from flagcore_http.answering import answered
from flagcore_http.bodies import read_body, read_json, structure_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented
from flagcore_http.usage_buffer import flush_usage
from flagcore_http.wire import CloneEnvironment, NameBody, UpdateEnvironment

__all__ = ["routes"]

routes = web.RouteTableDef()

ENVIRONMENT = "/api/admin/environments/{name}"


@routes.get(ENVIRONMENT)
@documented({200: Environment})
async def get_environment(request: web.Request) -> web.Response:
    found = await call(
        request, service(request).environments.get_environment, request.match_info["name"]
    )
    return answered(found)


@routes.put("/api/admin/environments/update/{name}")
@documented({200: Environment}, body=UpdateEnvironment)
async def update_environment(request: web.Request) -> web.Response:
    body = await read_body(request, UpdateEnvironment)
    updated = await call(
        request,
        service(request).environments.update_environment,
        request.match_info["name"],
        type=body.type,
        sort_order=body.sort_order,
        actor=actor(request),
    )
    return answered(updated)


@routes.put("/api/admin/environments/sort-order")
@documented({200: None}, body=dict[str, int], errors=(404,))
async def sort_environments(request: web.Request) -> web.Response:
    data = await read_json(request)
    orders = structure_body(data, dict[str, int])
    await call(
        request,
        service(request).environments.set_environment_sort_orders,
        orders,
        actor=actor(request),
    )
    return web.Response(status=200)


@routes.post(ENVIRONMENT + "/on")
@documented({204: None})
async def environment_on(request: web.Request) -> web.Response:
    return await _toggle(request, True)


@routes.post(ENVIRONMENT + "/off")
@documented({204: None})
async def environment_off(request: web.Request) -> web.Response:
    return await _toggle(request, False)


async def _toggle(request: web.Request, enabled: bool) -> web.Response:
    await call(
        request,
        service(request).environments.toggle_environment,
        request.match_info["name"],
        enabled,
        actor=actor(request),
    )
    return web.Response(status=204)


@routes.delete(ENVIRONMENT)
@documented({200: None}, errors=(409,))
async def delete_environment(request: web.Request) -> web.Response:
    await call(
        request,
        service(request).environments.delete_environment,
        request.match_info["name"],
        actor=actor(request),
    )
    return web.Response(status=200)


@routes.post(ENVIRONMENT + "/clone")
@documented({201: Environment}, body=CloneEnvironment, errors=(409,))
async def clone_environment(request: web.Request) -> web.Response:
    body = await read_body(request, CloneEnvironment)
    created = await call(
        request,
        service(request).environments.clone_environment,
        request.match_info["name"],
        body.name,
        body.type,
        projects=body.projects,
        clone_permissions=body.clone_permissions,
        actor=actor(request),
    )
    return answered(created, status=201)


@routes.post(ENVIRONMENT + "/rename")
@documented({200: Environment}, body=NameBody, errors=(409,))
async def rename_environment(request: web.Request) -> web.Response:
    """flagcore's own: ``{"name": "<new name>"}``. A POST beside ``/clone``, ``/on`` and
    ``/off`` (a PUT on ``…/<name>/rename`` would meet ``PUT …/update/<name>`` for an
    environment named ``update``)."""
    body = await read_body(request, NameBody)
    await flush_usage(request.app)  # SDK usage this node holds moves with the rest
    renamed = await call(
        request,
        service(request).environments.rename_environment,
        request.match_info["name"],
        body.name,
        actor=actor(request),
    )
    return answered(renamed)
