"""Groups, in Unleash's (enterprise) admin API shape: ``/api/admin/groups`` (list, read,
create, update, delete). Reading needs a signed-in person, as every admin read; changing
needs ADMIN (the service's rule). A group's project roles are given on a project's access
list (`flagcore_http.routes.roles`)."""

from __future__ import annotations

from aiohttp import web

from flagcore.service import GroupView, NewGroup
from flagcore.wire import GroupAnswer, GroupsAnswer
from flagcore_http import shapes
from flagcore_http.answering import answered
from flagcore_http.bodies import int_parameter, read_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented
from flagcore_http.wire import GroupBody

__all__ = ["routes"]

routes = web.RouteTableDef()

GROUPS = "/api/admin/groups"
_ID = {"id": shapes.ID}


def _new_group(body: GroupBody) -> NewGroup:
    return NewGroup(
        body.name,
        body.description,
        body.mappings_sso,
        body.root_role,
        tuple(member.user.id for member in body.users),
    )


def _answer(view: GroupView) -> GroupAnswer:
    return GroupAnswer.of(view.group, view.members, view.projects)


@routes.get(GROUPS)
@documented({200: GroupsAnswer})
async def list_groups(request: web.Request) -> web.Response:
    views = await call(request, service(request).groups.list_groups)
    return answered(GroupsAnswer(tuple(map(_answer, views))))


@routes.get(GROUPS + "/{id}")
@documented({200: GroupAnswer}, path=_ID)
async def get_group(request: web.Request) -> web.Response:
    view = await call(request, service(request).groups.get_group, int_parameter(request, "id"))
    return answered(_answer(view))


@routes.post(GROUPS)
@documented({200: GroupAnswer}, body=GroupBody, errors=(409,))
async def create_group(request: web.Request) -> web.Response:
    body = await read_body(request, GroupBody)
    view = await call(
        request, service(request).groups.create_group, _new_group(body), actor=actor(request)
    )
    return answered(_answer(view))


@routes.put(GROUPS + "/{id}")
@documented({200: GroupAnswer}, body=GroupBody, path=_ID, errors=(409,))
async def update_group(request: web.Request) -> web.Response:
    """The group becomes exactly the body: its members too (Unleash's way)."""
    body = await read_body(request, GroupBody)
    view = await call(
        request,
        service(request).groups.update_group,
        int_parameter(request, "id"),
        _new_group(body),
        actor=actor(request),
    )
    return answered(_answer(view))


@routes.delete(GROUPS + "/{id}")
@documented({200: None}, path=_ID)
async def delete_group(request: web.Request) -> web.Response:
    group_id = int_parameter(request, "id")
    await call(request, service(request).groups.delete_group, group_id, actor=actor(request))
    return web.Response(status=200)
