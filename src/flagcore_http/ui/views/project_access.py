"""A project's Access page: who holds which project role there (people and service
accounts), a role given to one of them, and someone's access taken away. Everyone signed
in reads it; the forms are drawn for those who may change access in this project
(``PROJECT_USER_ACCESS_WRITE``: an Admin, or the project's Owner), and the service
refuses anyone else."""

from __future__ import annotations

import urllib.parse

from aiohttp import web

from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput
from flagcore.permissions import Permission
from flagcore_http.calls import call
from flagcore_http.ui.flash import with_flash
from flagcore_http.ui.pages import form, form_status, page, redirect, render, svc, viewer

__all__ = ["routes"]

routes = web.RouteTableDef()

ACCESS = "/ui/projects/{id}/access"
_MAX_ID_DIGITS = 15


def _access_url(project: str) -> str:
    return f"/ui/projects/{urllib.parse.quote(project, safe='')}/access"


def _number(raw: str, path: str, what: str) -> int:
    if not raw.isascii() or not raw.isdigit() or len(raw) > _MAX_ID_DIGITS:
        raise InvalidInput(f"Choose {what}.", [ErrorDetail("choose one", path)])
    return int(raw)


async def _name_of(request: web.Request, user_id: int) -> str:
    """A person's or service account's name, for the confirmation."""
    service = svc(request)
    everyone = [
        *await call(request, service.users.list_users),
        *(account for account, _ in await call(request, service.service_accounts.list_accounts)),
    ]
    return next((u.display_name for u in everyone if u.id == user_id), f"user {user_id}")


async def _page(
    request: web.Request,
    *,
    values: dict[str, str] | None = None,
    error: FlagcoreError | None = None,
) -> web.Response:
    project = request.match_info["id"]
    service = svc(request)
    access = await call(request, service.roles.project_access, project)
    people = await call(request, service.users.list_users)
    listed = await call(request, service.service_accounts.list_accounts)
    accounts = [account for account, _ in listed]
    names = {role.id: role.name for role in access.roles}
    return render(
        request,
        "project_access.html",
        {
            "project": project,
            "holders": [
                (user, [names.get(role_id, f"role {role_id}") for role_id in held])
                for user, held in access.users
            ],
            "people": people,
            "accounts": accounts,
            "roles": access.roles,
            "may_edit": viewer(request).actor.may(
                Permission.PROJECT_USER_ACCESS_WRITE, project=project
            ),
            "values": values or {"user": "", "role": ""},
            "error": error.message if error else None,
            "details": [d.message for d in error.details] if error else [],
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
    """The chosen person or service account gets the chosen project role here."""
    project = request.match_info["id"]
    fields = form(request)
    values = {"user": fields.get("user", ""), "role": fields.get("role", "")}
    try:
        user_id = _number(values["user"], "$.users[0]", "a person or service account")
        role_id = _number(values["role"], "$.roles[0]", "a role")
        await call(
            request,
            svc(request).roles.add_project_access,
            project,
            [user_id],
            [role_id],
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _page(request, values=values, error=error)
    name = await _name_of(request, user_id)
    return redirect(with_flash(request, _access_url(project), "access-added", name))


@routes.post(ACCESS + "/{userId}/remove")
@page()
async def remove_access(request: web.Request) -> web.Response:
    """Every project role the person holds here is taken away."""
    project = request.match_info["id"]
    try:
        user_id = _number(request.match_info["userId"], "$.userId", "a person")
        await call(
            request,
            svc(request).roles.set_user_project_roles,
            project,
            user_id,
            [],
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _page(request, error=error)
    name = await _name_of(request, user_id)
    return redirect(with_flash(request, _access_url(project), "access-removed", name))
