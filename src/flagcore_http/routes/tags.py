"""Tag types and the tags on flags."""

from __future__ import annotations

from aiohttp import web

from flagcore.entities import Tag, TagType
from flagcore.wire import TagsAnswer, TagTypesAnswer
from flagcore_http.answering import answered
from flagcore_http.bodies import read_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented
from flagcore_http.wire import CreateTagType, TagBody

__all__ = ["routes"]

routes = web.RouteTableDef()


@routes.get("/api/admin/tag-types")
@documented({200: TagTypesAnswer})
async def list_tag_types(request: web.Request) -> web.Response:
    types = await call(request, service(request).tags.list_tag_types)
    return answered(TagTypesAnswer(1, tuple(types)))


@routes.post("/api/admin/tag-types")
@documented(
    {201: TagType},
    body=CreateTagType,
    errors=(409,),
    links={"tags.delete_tag_type": {"name": "$response.body#/name"}},
)
async def create_tag_type(request: web.Request) -> web.Response:
    body = await read_body(request, CreateTagType)
    created = await call(
        request,
        service(request).tags.create_tag_type,
        body.name,
        body.description,
        actor=actor(request),
    )
    return answered(created, status=201, headers={"Location": f"tag-types/{created.name}"})


@routes.delete("/api/admin/tag-types/{name}")
@documented({200: None}, errors=(409,))
async def delete_tag_type(request: web.Request) -> web.Response:
    await call(
        request,
        service(request).tags.delete_tag_type,
        request.match_info["name"],
        actor=actor(request),
    )
    return web.Response(status=200)


@routes.get("/api/admin/features/{name}/tags")
@documented({200: TagsAnswer})
async def list_flag_tags(request: web.Request) -> web.Response:
    tags = await call(request, service(request).tags.list_flag_tags, request.match_info["name"])
    return answered(TagsAnswer(1, tuple(tags)))


@routes.post("/api/admin/features/{name}/tags")
@documented({201: Tag}, body=TagBody, errors=(409,))
async def add_flag_tag(request: web.Request) -> web.Response:
    body = await read_body(request, TagBody)
    name = request.match_info["name"]
    tag = await call(
        request,
        service(request).tags.add_flag_tag,
        name,
        Tag(body.type, body.value),
        actor=actor(request),
    )
    return answered(tag, status=201, headers={"Location": f"{name}/tags"})


@routes.delete("/api/admin/features/{name}/tags/{type}/{value}")
@documented({200: None})
async def remove_flag_tag(request: web.Request) -> web.Response:
    info = request.match_info
    await call(
        request,
        service(request).tags.remove_flag_tag,
        info["name"],
        Tag(info["type"], info["value"]),
        actor=actor(request),
    )
    return web.Response(status=200)
