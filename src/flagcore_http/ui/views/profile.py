"""A person's own page: their name (changed here), email, root role, groups and project
roles; a new password, given the current one; and their sessions, with "sign out
everywhere". Only a person has one: the UI signed in with an admin token has none."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from flagcore.errors import ErrorDetail, FlagcoreError, Forbidden, InvalidInput, RateLimited
from flagcore.people import User
from flagcore_http.calls import call
from flagcore_http.signed_in import change_own_password
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

PROFILE = "/ui/profile"


def _person(request: web.Request) -> User:
    user = viewer(request).user
    if user is None:
        raise Forbidden(
            "This page is a person's own: signed in with an admin token, you are nobody."
        )
    return user


async def _page(
    request: web.Request,
    *,
    name: str | None = None,
    failed: str | None = None,
    error: FlagcoreError | None = None,
) -> web.Response:
    """``failed``: which form the error belongs to (``name`` or ``password``)."""
    user = _person(request)
    service = svc(request)
    fresh = await call(request, service.users.get_user, user.id)
    custom = await call(request, service.roles.custom_root_roles)
    groups = await call(request, service.groups.groups_of, user.id)
    current = viewer(request).session.session_id
    sessions = await call(request, service.sessions.sessions_of_user, user.id, current=current)
    has_password = await call(request, service.sessions.own_password, user.id) is not None
    principal = viewer(request).actor
    context: dict[str, Any] = {
        "person": fresh,
        "name": fresh.name or "" if name is None else name,
        "role_names": root_role_names(custom),
        "groups": groups,
        "project_roles": principal.project_roles,
        "sessions": sessions,
        "has_password": has_password,
        "failed": failed,
        "error": error.message if error else None,
        "errors": field_errors(error) if error else {},
    }
    status = form_status(error, 429 if isinstance(error, RateLimited) else 400)
    return render(request, "profile.html", context, status=status)


@routes.get(PROFILE)
@page()
async def profile(request: web.Request) -> web.Response:
    return await _page(request)


@routes.post(PROFILE + "/name")
@page()
async def change_name(request: web.Request) -> web.Response:
    user = _person(request)
    typed = form(request).get("name", "")
    try:
        await call(
            request, svc(request).users.set_name, user.id, typed, actor=viewer(request).actor
        )
    except FlagcoreError as error:
        return await _page(request, name=typed, failed="name", error=error)
    return redirect(with_flash(request, PROFILE, "profile-saved", "name"))


@routes.post(PROFILE + "/password")
@page()
async def change_password(request: web.Request) -> web.Response:
    """The current password, and the new one twice: this session stays, the others end."""
    _person(request)
    fields = form(request)
    old, new = fields.get("oldPassword", ""), fields.get("password", "")
    try:
        if new != fields.get("confirmPassword", ""):
            raise InvalidInput(
                "The password was not changed.",
                [ErrorDetail("does not match the new password", "$.confirmPassword")],
            )
        await change_own_password(
            request, viewer(request).actor, viewer(request).session.session_id, old, new
        )
    except FlagcoreError as error:
        return await _page(request, failed="password", error=error)
    return redirect(with_flash(request, PROFILE, "profile-saved", "new password"))
