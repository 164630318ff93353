"""A project's Access page: who holds which project role there (people, service accounts
and groups), a role given to one of them, someone's roles changed in place, and someone's
access taken away. Everyone signed in reads it; the forms are drawn for those who may
change access in this project (``PROJECT_USER_ACCESS_WRITE``: an Admin, or the project's
Owner), and the service refuses anyone else."""

from __future__ import annotations

import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any

import attrs
from aiohttp import web

from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput
from flagcore.permissions import Permission
from flagcore.service import Service
from flagcore_http.calls import call
from flagcore_http.ui.flash import with_flash
from flagcore_http.ui.pages import form, form_status, page, redirect, render, svc, viewer

__all__ = ["routes"]

routes = web.RouteTableDef()

ACCESS = "/ui/projects/{id}/access"
GROUP_PREFIX = "group:"
_MAX_ID_DIGITS = 15


def _access_url(project: str) -> str:
    return f"/ui/projects/{urllib.parse.quote(project, safe='')}/access"


def _number(raw: str, path: str, what: str) -> int:
    if not raw.isascii() or not raw.isdigit() or len(raw) > _MAX_ID_DIGITS:
        raise InvalidInput(f"Choose {what}.", [ErrorDetail("choose one", path)])
    return int(raw)


def _role_ids(raws: list[str]) -> list[int]:
    return [_number(raw, f"$.roles[{i}]", "a role") for i, raw in enumerate(raws)]


async def _name_of(request: web.Request, user_id: int) -> str:
    """A person's or service account's name, for the confirmation."""
    service = svc(request)
    everyone = [
        *await call(request, service.users.list_users),
        *(account for account, _ in await call(request, service.service_accounts.list_accounts)),
    ]
    return next((u.display_name for u in everyone if u.id == user_id), f"user {user_id}")


async def _group_name(request: web.Request, group_id: int) -> str:
    groups = await call(request, svc(request).groups.list_groups)
    return next((v.group.name for v in groups if v.group.id == group_id), f"group {group_id}")


async def _page(
    request: web.Request,
    *,
    values: dict[str, str] | None = None,
    changing: tuple[str, list[str]] | None = None,
    error: FlagcoreError | None = None,
) -> web.Response:
    """``changing``: a refused change of someone's roles in place (their row's key,
    ``user:<id>`` or ``group:<id>``, and the roles as ticked): shown by that row."""
    project = request.match_info["id"]
    service = svc(request)
    access = await call(request, service.roles.project_access, project)
    people = await call(request, service.users.list_users)
    listed = await call(request, service.service_accounts.list_accounts)
    groups = await call(request, service.groups.list_groups)
    accounts = [account for account, _ in listed]
    names = {role.id: role.name for role in access.roles}
    return render(
        request,
        "project_access.html",
        {
            "project": project,
            "holders": [
                (user, [str(r) for r in held], [names.get(r, f"role {r}") for r in held])
                for user, held in access.users
            ],
            "group_holders": [
                (view, [str(r) for r in held], [names.get(r, f"role {r}") for r in held])
                for view, held in access.groups
            ],
            "people": people,
            "accounts": accounts,
            "groups": [view.group for view in groups],
            "known": [
                *(str(u.id) for u in [*people, *accounts]),
                *(GROUP_PREFIX + str(v.group.id) for v in groups),
            ],
            "roles": access.roles,
            "may_edit": viewer(request).actor.may(
                Permission.PROJECT_USER_ACCESS_WRITE, project=project
            ),
            "values": values or {"user": "", "role": ""},
            "changing": changing,
            "error": error.message if error and not changing else None,
            "details": [d.message for d in error.details] if error and not changing else [],
            "change_error": error.message if error and changing else None,
            "change_details": [d.message for d in error.details] if error and changing else [],
        },
        status=form_status(error),
    )


@routes.get(ACCESS)
@page()
async def project_access(request: web.Request) -> web.Response:
    return await _page(request)


@routes.post(ACCESS)
@page()
async def add_access(request: web.Request) -> web.Response:
    """The chosen person, service account or group gets the chosen project role here."""
    project = request.match_info["id"]
    fields = form(request)
    values = {"user": fields.get("user", ""), "role": fields.get("role", "")}
    chosen = values["user"]
    try:
        role_id = _number(values["role"], "$.roles[0]", "a role")
        if chosen.startswith(GROUP_PREFIX):
            group_id = _number(chosen.removeprefix(GROUP_PREFIX), "$.groups[0]", "a group")
            user_ids: list[int] = []
            group_ids = [group_id]
        else:
            user_ids = [_number(chosen, "$.users[0]", "a person, service account or group")]
            group_ids = []
        await call(
            request,
            svc(request).roles.add_project_access,
            project,
            user_ids,
            [role_id],
            group_ids=group_ids,
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _page(request, values=values, error=error)
    name = await (
        _name_of(request, user_ids[0]) if user_ids else _group_name(request, group_ids[0])
    )
    return redirect(with_flash(request, _access_url(project), "access-added", name))


@attrs.frozen
class _Holder:
    """Who holds project roles on a row of the page: a person (or service account), or a
    group; the same forms change either."""

    kind: str  # "user" or "group", as the page names a row being changed
    key: str  # the address's part that holds the id
    noun: str  # what the refusal asks to choose
    set_roles: Callable[[Service], Callable[..., Any]]
    name: Callable[[web.Request, int], Awaitable[str]]

    def id_of(self, request: web.Request) -> int:
        return _number(request.match_info[self.key], f"$.{self.key}", self.noun)


_USER = _Holder(
    "user", "userId", "a person", lambda service: service.roles.set_user_project_roles, _name_of
)
_GROUP = _Holder(
    "group",
    "groupId",
    "a group",
    lambda service: service.roles.set_group_project_roles,
    _group_name,
)


async def _set_roles(
    request: web.Request, holder: _Holder, *, ticked: list[str], removing: bool = False
) -> web.Response:
    """The holder's project roles here become exactly ``ticked`` (``removing``: none, the
    access taken away); a refused change comes back at the holder's row as ticked, a
    refused removal above the table."""
    project = request.match_info["id"]
    raw = request.match_info[holder.key]
    try:
        holder_id = holder.id_of(request)
        await call(
            request,
            holder.set_roles(svc(request)),
            project,
            holder_id,
            _role_ids(ticked),
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        if removing:
            return await _page(request, error=error)
        return await _page(request, changing=(f"{holder.kind}:{raw}", ticked), error=error)
    name = await holder.name(request, holder_id)
    flash = "access-changed" if ticked else "access-removed"
    return redirect(with_flash(request, _access_url(project), flash, name))


@routes.post(ACCESS + "/{userId}/roles")
@page()
async def change_user_roles(request: web.Request) -> web.Response:
    """The person's project roles here become exactly the ones ticked, in place."""
    return await _set_roles(request, _USER, ticked=form(request).getall("roles", []))


@routes.post(ACCESS + "/groups/{groupId}/roles")
@page()
async def change_group_roles(request: web.Request) -> web.Response:
    """The group's project roles here become exactly the ones ticked, in place."""
    return await _set_roles(request, _GROUP, ticked=form(request).getall("roles", []))


@routes.post(ACCESS + "/{userId}/remove")
@page()
async def remove_access(request: web.Request) -> web.Response:
    """Every project role the person holds here is taken away."""
    return await _set_roles(request, _USER, ticked=[], removing=True)


@routes.post(ACCESS + "/groups/{groupId}/remove")
@page()
async def remove_group_access(request: web.Request) -> web.Response:
    """Every project role the group holds here is taken away."""
    return await _set_roles(request, _GROUP, ticked=[], removing=True)
