"""Roles: every role with its permissions (the predefined five and the custom ones), and
custom root and project roles made, changed and deleted. Everyone signed in reads the
list (Unleash's Viewer reads everything); the forms are drawn for those who hold ADMIN,
and the service refuses anyone else."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput, NotFound
from flagcore.permissions import (
    ENVIRONMENT_PERMISSIONS,
    PROJECT_PERMISSIONS,
    Grant,
    Permission,
    Role,
    RoleType,
)
from flagcore.service import NewRole
from flagcore_http.calls import call
from flagcore_http.ui.flash import with_flash
from flagcore_http.ui.pages import form, form_status, page, redirect, render, svc, viewer

__all__ = ["routes"]

routes = web.RouteTableDef()

LIST = "/ui/roles"
_TYPES = {RoleType.CUSTOM.value: "project role", RoleType.ROOT_CUSTOM.value: "root role"}
_MAX_ID_DIGITS = 15


def grant_value(grant: Grant) -> str:
    """A permission checkbox's value: ``NAME``, or ``NAME@environment`` for a project
    role's environment permission held in one environment only."""
    if grant.environment is None:
        return grant.permission.value
    return f"{grant.permission.value}@{grant.environment}"


def _grants(values: list[str]) -> tuple[Grant, ...]:
    grants, details = [], []
    for index, value in enumerate(values):
        name, _, environment = value.partition("@")
        if name not in Permission.__members__:
            details.append(ErrorDetail(f"{name}: no such permission", f"$.permissions[{index}]"))
            continue
        grants.append(Grant(Permission(name), environment or None))
    if details:
        raise InvalidInput("the role is not valid", details)
    return tuple(grants)


def _role_id(request: web.Request) -> int:
    raw = request.match_info["id"]
    if not raw.isascii() or not raw.isdigit() or len(raw) > _MAX_ID_DIGITS:
        raise NotFound("There is no such role.")
    return int(raw)


def _typed(request: web.Request) -> dict[str, Any]:
    fields = form(request)
    return {
        "name": fields.get("name", ""),
        "description": fields.get("description", ""),
        "type": fields.get("type", ""),
        "permissions": fields.getall("permissions", []),
    }


def _readable(error: FlagcoreError, typed: dict[str, Any]) -> list[str]:
    """The error's details with the permission each names, as the person ticked it."""
    lines = []
    for detail in error.details:
        path = detail.path or ""
        if path.startswith("$.permissions["):
            index = int(path[len("$.permissions[") :].split("]", 1)[0])
            ticked = typed["permissions"]
            label = ticked[index] if index < len(ticked) else path
            lines.append(f"{label.replace('@', ' in ')}: {detail.message}")
        else:
            lines.append(detail.message)
    return lines


async def _render(
    request: web.Request,
    template: str,
    *,
    values: dict[str, Any] | None = None,
    editing: Role | None = None,
    error: FlagcoreError | None = None,
    failed: str | None = None,
    status: int | None = None,
) -> web.Response:
    """``failed``: ``delete`` when the error is a refused deletion, not the form's."""
    roles = await call(request, svc(request).roles.list_roles)
    environments = await call(request, svc(request).environments.list_environments)
    if values is None:
        values = {"name": "", "description": "", "type": RoleType.CUSTOM.value, "permissions": []}
        if editing is not None:
            values = {
                "name": editing.name,
                "description": editing.description,
                "type": editing.type.value,
                "permissions": [grant_value(g) for g in editing.grants],
            }
    return render(
        request,
        template,
        {
            "roles": roles,
            "editing": editing,
            "values": values,
            "types": _TYPES,
            "permissions": [p.value for p in Permission],
            "project_permissions": {p.value for p in PROJECT_PERMISSIONS},
            "environment_permissions": sorted(p.value for p in ENVIRONMENT_PERMISSIONS),
            "environments": [e.name for e in environments],
            "grant_value": grant_value,
            "may_edit": viewer(request).actor.may(Permission.ADMIN),
            "failed": failed,
            "error": error.message if error else None,
            "details": _readable(error, values) if error else [],
        },
        status=form_status(error) if status is None else status,
    )


@routes.get(LIST)
@page()
async def list_roles(request: web.Request) -> web.Response:
    return await _render(request, "roles.html")


async def _save(request: web.Request, role_id: int | None) -> web.Response:
    typed = _typed(request)
    editing = None
    roles = svc(request).roles
    try:
        if role_id is not None:
            editing = await call(request, roles.get_role, role_id)
        if typed["type"] not in _TYPES:
            raise InvalidInput("Choose a kind of role.", [ErrorDetail("choose one", "$.type")])
        new = NewRole(
            typed["name"].strip(),
            RoleType(typed["type"]),
            typed["description"],
            _grants(typed["permissions"]),
        )
        actor = viewer(request).actor
        if role_id is None:
            saved = await call(request, roles.create_role, new, actor=actor)
        else:
            saved = await call(request, roles.update_role, role_id, new, actor=actor)
    except FlagcoreError as error:
        template = "roles.html" if role_id is None else "role.html"
        return await _render(request, template, values=typed, editing=editing, error=error)
    return redirect(with_flash(request, LIST, "role-saved", saved.name))


@routes.post(LIST)
@page()
async def create_role(request: web.Request) -> web.Response:
    return await _save(request, None)


@routes.get(LIST + "/{id}")
@page()
async def edit_role(request: web.Request) -> web.Response:
    role = await call(request, svc(request).roles.get_role, _role_id(request))
    return await _render(request, "role.html", editing=role)


@routes.post(LIST + "/{id}")
@page()
async def update_role(request: web.Request) -> web.Response:
    return await _save(request, _role_id(request))


@routes.post(LIST + "/{id}/delete")
@page()
async def delete_role(request: web.Request) -> web.Response:
    roles = svc(request).roles
    role = await call(request, roles.get_role, _role_id(request))
    try:
        await call(request, roles.delete_role, role.id, actor=viewer(request).actor)
    except FlagcoreError as error:
        status = form_status(error, 409)
        return await _render(request, "roles.html", error=error, failed="delete", status=status)
    return redirect(with_flash(request, LIST, "role-deleted", role.name))
