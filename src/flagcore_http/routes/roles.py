"""Roles and project access, in Unleash's (enterprise) admin API shape:
``/api/admin/roles`` (list, read, create, update, delete custom roles; the predefined
ones are read-only) and a project's access list (``/api/admin/projects/{project}/access``
and ``.../users/{userId}/roles``, ``.../groups/{groupId}/roles``). Who may change them
is the service's rule (ADMIN for roles, PROJECT_USER_ACCESS_WRITE in the project for its
access)."""

from __future__ import annotations

from aiohttp import web

from flagcore.permissions import Grant
from flagcore.service import NewRole
from flagcore.wire import ProjectAccessAnswer, RolesAnswer, RoleWithPermissionsAnswer
from flagcore_http import shapes
from flagcore_http.answering import answered
from flagcore_http.bodies import int_parameter, read_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import documented
from flagcore_http.wire import ProjectAccessBody, RoleBody, UserRolesBody

__all__ = ["routes"]

routes = web.RouteTableDef()

ROLES = "/api/admin/roles"
ACCESS = "/api/admin/projects/{project}/access"
USER_ROLES = "/api/admin/projects/{project}/users/{userId}/roles"
GROUP_ROLES = "/api/admin/projects/{project}/groups/{groupId}/roles"
_ID = {"id": shapes.ID}
_USER_ID = {"userId": shapes.ID}
_GROUP_ID = {"groupId": shapes.ID}


def _new_role(body: RoleBody) -> NewRole:
    grants = tuple(Grant(p.name, p.environment) for p in body.permissions)
    return NewRole(body.name, body.type, body.description, grants)


@routes.get(ROLES)
@documented({200: RolesAnswer})
async def list_roles(request: web.Request) -> web.Response:
    return answered(RolesAnswer.of(await call(request, service(request).roles.list_roles)))


@routes.get(ROLES + "/{id}")
@documented({200: RoleWithPermissionsAnswer}, path=_ID)
async def get_role(request: web.Request) -> web.Response:
    role = await call(request, service(request).roles.get_role, int_parameter(request, "id"))
    return answered(RoleWithPermissionsAnswer.of(role))


@routes.post(ROLES)
@documented({200: RoleWithPermissionsAnswer}, body=RoleBody, errors=(409,))
async def create_role(request: web.Request) -> web.Response:
    body = await read_body(request, RoleBody)
    role = await call(
        request, service(request).roles.create_role, _new_role(body), actor=actor(request)
    )
    return answered(RoleWithPermissionsAnswer.of(role))


@routes.put(ROLES + "/{id}")
@documented({200: RoleWithPermissionsAnswer}, body=RoleBody, path=_ID, errors=(409,))
async def update_role(request: web.Request) -> web.Response:
    body = await read_body(request, RoleBody)
    role = await call(
        request,
        service(request).roles.update_role,
        int_parameter(request, "id"),
        _new_role(body),
        actor=actor(request),
    )
    return answered(RoleWithPermissionsAnswer.of(role))


@routes.delete(ROLES + "/{id}")
@documented({200: None}, path=_ID, errors=(409,))
async def delete_role(request: web.Request) -> web.Response:
    role_id = int_parameter(request, "id")
    await call(request, service(request).roles.delete_role, role_id, actor=actor(request))
    return web.Response(status=200)


@routes.get(ACCESS)
@documented({200: ProjectAccessAnswer})
async def project_access(request: web.Request) -> web.Response:
    project = request.match_info["project"]
    access = await call(request, service(request).roles.project_access, project)
    groups = [(view.group, view.members, held) for view, held in access.groups]
    return answered(ProjectAccessAnswer.of(access.users, access.roles, groups))


@routes.post(ACCESS)
@documented({200: None}, body=ProjectAccessBody)
async def add_project_access(request: web.Request) -> web.Response:
    body = await read_body(request, ProjectAccessBody)
    await call(
        request,
        service(request).roles.add_project_access,
        request.match_info["project"],
        body.users,
        body.roles,
        group_ids=body.groups,
        actor=actor(request),
    )
    return web.Response(status=200)


async def _holder_roles(
    request: web.Request, setter: str, id_name: str, roles: tuple[int, ...]
) -> web.Response:
    """A user's or a group's roles in the project become exactly ``roles`` (none: their
    access is removed), by the service's ``setter``."""
    await call(
        request,
        getattr(service(request).roles, setter),
        request.match_info["project"],
        int_parameter(request, id_name),
        roles,
        actor=actor(request),
    )
    return web.Response(status=200)


@routes.put(USER_ROLES)
@documented({200: None}, body=UserRolesBody, path=_USER_ID)
async def set_user_project_roles(request: web.Request) -> web.Response:
    body = await read_body(request, UserRolesBody)
    return await _holder_roles(request, "set_user_project_roles", "userId", body.roles)


@routes.delete(USER_ROLES)
@documented({200: None}, path=_USER_ID)
async def remove_user_project_access(request: web.Request) -> web.Response:
    return await _holder_roles(request, "set_user_project_roles", "userId", ())


@routes.put(GROUP_ROLES)
@documented({200: None}, body=UserRolesBody, path=_GROUP_ID)
async def set_group_project_roles(request: web.Request) -> web.Response:
    """The group's roles in the project become exactly ``roles``."""
    body = await read_body(request, UserRolesBody)
    return await _holder_roles(request, "set_group_project_roles", "groupId", body.roles)


@routes.delete(GROUP_ROLES)
@documented({200: None}, path=_GROUP_ID)
async def remove_group_project_access(request: web.Request) -> web.Response:
    return await _holder_roles(request, "set_group_project_roles", "groupId", ())
