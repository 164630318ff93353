"""The context-field registry on Unleash's paths: ``/api/admin/context``.

Answers in Unleash's shapes: the list is a bare array, a create answers the field with
201, an update, a delete and a free name answer 200 with no body.
"""

from __future__ import annotations

from aiohttp import web

from flagcore.entities import ContextField
from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.wire import ContextFieldAnswer, write_answer
from flagcore_http.answering import answered
from flagcore_http.bodies import read_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented
from flagcore_http.wire import ContextFieldBody, ContextFieldUpdate, NameBody

__all__ = ["routes"]

routes = web.RouteTableDef()

CONTEXT = "/api/admin/context"


@routes.get(CONTEXT)
@documented({200: tuple[ContextFieldAnswer, ...]})
async def list_context_fields(request: web.Request) -> web.Response:
    """Unleash's built-in fields (as edited, if they were) and those people added."""
    fields = await call(request, service(request).context_fields.list_context_fields)
    return web.json_response([write_answer(ContextFieldAnswer.of(f)) for f in fields])


@routes.post(CONTEXT + "/validate")
@documented({200: None}, body=NameBody, errors=(409,))
async def validate_context_field_name(request: web.Request) -> web.Response:
    body = await read_body(request, NameBody)
    await call(request, service(request).context_fields.validate_name, body.name)
    return web.Response(status=200)


@routes.get(CONTEXT + "/{name}")
@documented({200: ContextFieldAnswer})
async def get_context_field(request: web.Request) -> web.Response:
    field = await call(
        request, service(request).context_fields.get_context_field, request.match_info["name"]
    )
    return answered(ContextFieldAnswer.of(field))


@routes.post(CONTEXT)
@documented(
    {201: ContextFieldAnswer},
    body=ContextFieldBody,
    errors=(409,),
    links={"context_fields.delete_context_field": {"name": "$response.body#/name"}},
)
async def create_context_field(request: web.Request) -> web.Response:
    body = await read_body(request, ContextFieldBody)
    if body.project is not None:
        raise InvalidInput(
            "context fields here are global: project-scoped fields are not supported",
            [ErrorDetail("not supported: leave project out", "$.project")],
        )
    field = ContextField(
        body.name,
        body.description,
        body.legal_values or (),
        body.stickiness,
        10 if body.sort_order is None else body.sort_order,
    )
    created = await call(
        request, service(request).context_fields.create_context_field, field, actor=actor(request)
    )
    return answered(
        ContextFieldAnswer.of(created), status=201, headers={"Location": f"context/{created.name}"}
    )


@routes.put(CONTEXT + "/{name}")
@documented({200: None}, body=ContextFieldUpdate)
async def update_context_field(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    body = await read_body(request, ContextFieldUpdate)
    if body.name is not None and body.name != name:
        raise InvalidInput(
            f'the body names "{body.name[:100]}" but the path names "{name}"; '
            "a context field cannot be renamed",
            [ErrorDetail("must be the name in the path", "$.name")],
        )
    await call(
        request,
        service(request).context_fields.update_context_field,
        name,
        description=body.description,
        legal_values=body.legal_values or (),
        stickiness=body.stickiness,
        sort_order=body.sort_order,
        actor=actor(request),
    )
    return web.Response(status=200)


@routes.delete(CONTEXT + "/{name}")
@documented({200: None}, errors=(409,))
async def delete_context_field(request: web.Request) -> web.Response:
    await call(
        request,
        service(request).context_fields.delete_context_field,
        request.match_info["name"],
        actor=actor(request),
    )
    return web.Response(status=200)
