"""Groups: every group with its members, root role, provider groups and projects; a group
made, its members and settings changed on its own page, and deleted. Everyone signed in
reads them (Unleash's Viewer reads everything); the forms are drawn for those who hold
ADMIN, and the service refuses anyone else. A group's project roles are given on a
project's Access page."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput, NotFound
from flagcore.permissions import Permission
from flagcore.service import GroupView, NewGroup
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
from flagcore_http.ui.root_roles import root_role_names

__all__ = ["routes"]

routes = web.RouteTableDef()

LIST = "/ui/groups"
_MAX_ID_DIGITS = 15


def _id(raw: str, path: str, what: str) -> int:
    if not raw.isascii() or not raw.isdigit() or len(raw) > _MAX_ID_DIGITS:
        raise InvalidInput(f"Choose {what}.", [ErrorDetail("choose one", path)])
    return int(raw)


def _group_id(request: web.Request) -> int:
    raw = request.match_info["id"]
    if not raw.isascii() or not raw.isdigit() or len(raw) > _MAX_ID_DIGITS:
        raise NotFound("There is no such group.")
    return int(raw)


def _typed(request: web.Request) -> dict[str, Any]:
    fields = form(request)
    return {
        "name": fields.get("name", ""),
        "description": fields.get("description", ""),
        "rootRole": fields.get("rootRole", ""),
        "mappingsSSO": fields.get("mappingsSSO", ""),
        "users": fields.getall("users", []),
    }


def _values_of(view: GroupView) -> dict[str, Any]:
    group = view.group
    return {
        "name": group.name,
        "description": group.description or "",
        "rootRole": "" if group.root_role is None else str(group.root_role),
        "mappingsSSO": "\n".join(group.mappings_sso),
        "users": [str(user.id) for _, user in view.members],
    }


def _new_group(typed: dict[str, Any]) -> NewGroup:
    """What was typed, as the service takes it: provider groups one per line (blank lines
    are not groups), the root role an id or none, members by id."""
    root_role = None
    if typed["rootRole"]:
        root_role = _id(typed["rootRole"], "$.rootRole", "a root role")
    user_ids = tuple(
        _id(raw, f"$.users[{index}].user.id", "a person")
        for index, raw in enumerate(typed["users"])
    )
    mappings = tuple(line.strip() for line in typed["mappingsSSO"].splitlines() if line.strip())
    return NewGroup(typed["name"], typed["description"] or None, mappings, root_role, user_ids)


async def _render(
    request: web.Request,
    template: str,
    *,
    values: dict[str, Any] | None = None,
    editing: GroupView | None = None,
    error: FlagcoreError | None = None,
    failed: str | None = None,
    status: int | None = None,
) -> web.Response:
    """``failed``: ``delete`` when the error is a refused deletion, not the form's."""
    service = svc(request)
    custom = await call(request, service.roles.custom_root_roles)
    people = await call(request, service.users.list_users)
    if values is None:
        values = (
            _values_of(editing)
            if editing is not None
            else {"name": "", "description": "", "rootRole": "", "mappingsSSO": "", "users": []}
        )
    errors = field_errors(error) if error and failed != "delete" else {}
    return render(
        request,
        template,
        {
            "groups": await call(request, service.groups.list_groups),
            "editing": editing,
            "people": people,
            "role_names": root_role_names(custom),
            "values": values,
            "may_edit": viewer(request).actor.may(Permission.ADMIN),
            "failed": failed,
            "error": error.message if error else None,
            "errors": errors,
        },
        status=form_status(error) if status is None else status,
    )


@routes.get(LIST)
@page()
async def list_groups(request: web.Request) -> web.Response:
    return await _render(request, "groups.html")


async def _save(request: web.Request, group_id: int | None) -> web.Response:
    typed = _typed(request)
    groups = svc(request).groups
    editing = None
    try:
        if group_id is not None:
            editing = await call(request, groups.get_group, group_id)
        new = _new_group(typed)
        actor = viewer(request).actor
        if group_id is None:
            saved = await call(request, groups.create_group, new, actor=actor)
        else:
            saved = await call(request, groups.update_group, group_id, new, actor=actor)
    except FlagcoreError as error:
        template = "groups.html" if group_id is None else "group.html"
        return await _render(request, template, values=typed, editing=editing, error=error)
    return redirect(with_flash(request, LIST, "group-saved", saved.group.name))


@routes.post(LIST)
@page()
async def create_group(request: web.Request) -> web.Response:
    return await _save(request, None)


@routes.get(LIST + "/{id}")
@page()
async def group_page(request: web.Request) -> web.Response:
    view = await call(request, svc(request).groups.get_group, _group_id(request))
    return await _render(request, "group.html", editing=view)


@routes.post(LIST + "/{id}")
@page()
async def update_group(request: web.Request) -> web.Response:
    return await _save(request, _group_id(request))


@routes.post(LIST + "/{id}/delete")
@page()
async def delete_group(request: web.Request) -> web.Response:
    groups = svc(request).groups
    view = await call(request, groups.get_group, _group_id(request))
    try:
        await call(request, groups.delete_group, view.group.id, actor=viewer(request).actor)
    except FlagcoreError as error:
        status = form_status(error, 409)
        return await _render(request, "groups.html", error=error, failed="delete", status=status)
    return redirect(with_flash(request, LIST, "group-deleted", view.group.name))
