"""Roles and project access: the predefined and custom roles with their permissions;
create, edit and delete a custom role (its permissions as boxes, per-environment grants
kept as they are); who holds which role in a project, give and take them."""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp import web

from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput
from flagcore.permissions import PROJECT_PERMISSIONS, Grant, Permission, RoleType
from flagcore.service import NewRole
from flagcore_http.calls import call
from flagcore_http.ui.flash import with_flash
from flagcore_http.ui.pages import (
    field_errors,
    form,
    form_status,
    page,
    redirect,
    render,
    svc,
    viewer,
)

__all__ = ["routes"]

routes = web.RouteTableDef()

LIST = "/ui/roles"
ROLE_TYPES = {"custom": "project role (custom)", "root-custom": "root role (custom)"}


def _id(request: web.Request, name: str = "id") -> int:
    raw = request.match_info[name]
    if not raw.isascii() or not raw.isdigit() or len(raw) > 12:
        raise InvalidInput(f"not an {name}", [ErrorDetail(f"not an {name}", f"/params/{name}")])
    return int(raw)


def _grant_value(grant: Grant) -> str:
    """A box's value: the permission, and ``@environment`` for a per-environment grant."""
    value = grant.permission.value
    return f"{value}@{grant.environment}" if grant.environment else value


def _grants(values: list[str]) -> tuple[Grant, ...]:
    grants = []
    for index, value in enumerate(values):
        name, _, environment = value.partition("@")
        if name not in Permission.__members__.values():
            raise InvalidInput(
                f"{name!r} is not a permission",
                [ErrorDetail("not a permission", f"$.permissions[{index}].name")],
            )
        grants.append(Grant(Permission(name), environment or None))
    return tuple(grants)


@routes.get(LIST)
@page()
async def list_roles(request: web.Request) -> web.Response:
    roles = await call(request, svc(request).roles.list_roles)
    return render(request, "roles.html", {"roles": roles, "grant_value": _grant_value})


def _editor(
    request: web.Request,
    values: Mapping[str, object],
    *,
    editing: int | None,
    error: FlagcoreError | None = None,
) -> web.Response:
    chosen = values["permissions"]
    assert isinstance(chosen, list)
    boxes = [p.value for p in Permission]
    # A per-environment grant (set with the API) or an odd value stays a box of its own.
    boxes += [value for value in chosen if value not in boxes]
    return render(
        request,
        "role.html",
        {
            "values": values,
            "editing": editing,
            "boxes": boxes,
            "project_permissions": {p.value for p in PROJECT_PERMISSIONS},
            "role_types": ROLE_TYPES,
            "error": error.message if error else None,
            "errors": field_errors(error) if error else {},
        },
        status=form_status(error),
    )


@routes.get(LIST + "/new")
@page()
async def new_role(request: web.Request) -> web.Response:
    values = {"name": "", "type": "custom", "description": "", "permissions": []}
    return _editor(request, values, editing=None)


@routes.get(LIST + "/{id}")
@page()
async def edit_role(request: web.Request) -> web.Response:
    role = await call(request, svc(request).roles.get_role, _id(request))
    values = {
        "name": role.name,
        "type": role.type.value,
        "description": role.description,
        "permissions": [_grant_value(g) for g in role.grants],
        "predefined": role.predefined,
    }
    return _editor(request, values, editing=role.id)


async def _save(request: web.Request, editing: int | None) -> web.Response:
    fields = form(request)
    values: dict[str, object] = {
        "name": fields.get("name", ""),
        "type": fields.get("type", ""),
        "description": fields.get("description", ""),
        "permissions": fields.getall("permissions", []),
    }
    roles = svc(request).roles
    try:
        if values["type"] not in ROLE_TYPES:
            raise InvalidInput("choose a role type", [ErrorDetail("choose one", "$.type")])
        new = NewRole(
            fields.get("name", "").strip(),
            RoleType(str(values["type"])),
            fields.get("description", "").replace("\r\n", "\n"),
            _grants(fields.getall("permissions", [])),
        )
        if editing is None:
            saved = await call(request, roles.create_role, new, actor=viewer(request).actor)
        else:
            saved = await call(
                request, roles.update_role, editing, new, actor=viewer(request).actor
            )
    except FlagcoreError as error:
        return _editor(request, values, editing=editing, error=error)
    return redirect(with_flash(request, LIST, "role-saved", saved.name))


@routes.post(LIST + "/new")
@page()
async def create_role(request: web.Request) -> web.Response:
    return await _save(request, None)


@routes.post(LIST + "/{id}")
@page()
async def update_role(request: web.Request) -> web.Response:
    role = await call(request, svc(request).roles.get_role, _id(request))
    return await _save(request, role.id)


@routes.post(LIST + "/{id}/delete")
@page()
async def delete_role(request: web.Request) -> web.Response:
    role = await call(request, svc(request).roles.get_role, _id(request))
    await call(request, svc(request).roles.delete_role, role.id, actor=viewer(request).actor)
    return redirect(with_flash(request, LIST, "role-deleted", role.name))


# Named as the Projects page names a project in its routes (``/ui/projects/{id}/...``).
ACCESS = "/ui/projects/{id}/access"


async def _access_page(
    request: web.Request,
    project: str,
    *,
    values: dict[str, object] | None = None,
    error: FlagcoreError | None = None,
) -> web.Response:
    service = svc(request)
    access = await call(request, service.roles.project_access, project)
    users = await call(request, service.users.list_users)
    return render(
        request,
        "project_access.html",
        {
            "project": project,
            "access": access,
            "users": users,
            "values": values or {"user": "", "roles": []},
            "error": error.message if error else None,
            "errors": field_errors(error) if error else {},
        },
        status=form_status(error),
    )


@routes.get(ACCESS)
@page()
async def project_access(request: web.Request) -> web.Response:
    return await _access_page(request, request.match_info["id"])


def _numbers(values: list[str], path: str) -> list[int]:
    if not all(v.isascii() and v.isdigit() and len(v) < 12 for v in values):
        raise InvalidInput("choose from the lists", [ErrorDetail("choose from the list", path)])
    return [int(v) for v in values]


@routes.post(ACCESS)
@page()
async def give_project_access(request: web.Request) -> web.Response:
    project = request.match_info["id"]
    fields = form(request)
    values: dict[str, object] = {
        "user": fields.get("user", ""),
        "roles": fields.getall("roles", []),
    }
    try:
        users = _numbers([fields.get("user", "")], "$.users[0]")
        roles = _numbers(fields.getall("roles", []), "$.roles")
        if not roles:
            raise InvalidInput("choose at least one role", [ErrorDetail("choose one", "$.roles")])
        await call(
            request,
            svc(request).roles.add_project_access,
            project,
            users,
            roles,
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _access_page(request, project, values=values, error=error)
    url = ACCESS.format(id=project)
    return redirect(with_flash(request, url, "project-access-saved", project))


@routes.post(ACCESS + "/{user}")
@page()
async def set_user_project_roles(request: web.Request) -> web.Response:
    """A user's roles in the project become the ones chosen; none takes their access."""
    project = request.match_info["id"]
    user = _id(request, "user")
    roles = _numbers(form(request).getall("roles", []), "$.roles")
    await call(
        request,
        svc(request).roles.set_user_project_roles,
        project,
        user,
        roles,
        actor=viewer(request).actor,
    )
    url = ACCESS.format(id=project)
    return redirect(with_flash(request, url, "project-access-saved", project))
