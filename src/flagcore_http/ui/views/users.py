"""Users: list, invite (the link shown once, to the admin), reset links, a user's root
role (predefined or custom), ending a user's sessions, disabling and deleting. Managing
users needs ADMIN (the Admin root role, or a custom root role holding it; a token, or
``--auth none``, acts as Admin), as on the API."""

from __future__ import annotations

from aiohttp import web

from flagcore.errors import ErrorDetail, FlagcoreError, Forbidden, InvalidInput
from flagcore.people import LinkKind, RootRole
from flagcore.permissions import Permission
from flagcore.service import NewUser
from flagcore_http.calls import call
from flagcore_http.mail import MailResult, mail_link
from flagcore_http.signed_in import set_link
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
from flagcore_http.ui.root_roles import (
    posted_root_role,
    root_role_names,
    root_role_options,
    value_of,
)

__all__ = ["routes"]

routes = web.RouteTableDef()

_FIELDS = ("email", "username", "name", "rootRole")


def _admins_only(request: web.Request) -> None:
    if not viewer(request).actor.may(Permission.ADMIN):
        raise Forbidden("Managing users needs the Admin root role.")


async def _page(
    request: web.Request,
    *,
    link: tuple[str, str] | None = None,
    mail: MailResult | None = None,
    values: dict[str, str] | None = None,
    changing: tuple[int, str] | None = None,
    error: FlagcoreError | None = None,
    status: int = 200,
) -> web.Response:
    """``changing``: a refused root-role change (the user's id, the value as posted): its
    error is shown by that user's row, not by the invitation form."""
    custom = await call(request, svc(request).roles.custom_root_roles)
    return render(
        request,
        "users.html",
        {
            "users": await call(request, svc(request).users.list_users),
            "linked": await call(request, svc(request).users.provider_accounts),
            "roles": root_role_options(custom),
            "role_names": root_role_names(custom),
            "role_value": value_of,
            "link": link,  # (whose, address): shown on this answer only
            "mail": mail,  # what became of its mail, when a mail server is configured
            "values": values or {"rootRole": RootRole.VIEWER.value},
            "error": error.message if error and not changing else None,
            "errors": field_errors(error) if error and not changing else {},
            "changing": changing,
            "change_error": error.message if error and changing else None,
        },
        status=status,
    )


def _user_id(request: web.Request) -> int:
    raw = request.match_info["id"]
    if not raw.isascii() or not raw.isdigit() or len(raw) > 18:
        raise InvalidInput("not a user id", [ErrorDetail("not a user id", "$.id")])
    return int(raw)


@routes.get("/ui/users")
@page()
async def list_users(request: web.Request) -> web.Response:
    _admins_only(request)
    return await _page(request)


@routes.post("/ui/users")
@page()
async def invite_user(request: web.Request) -> web.Response:
    """A new user without a password, and the invitation link that lets them set one."""
    _admins_only(request)
    fields = form(request)
    values = {key: fields.get(key, "") for key in _FIELDS}
    users = svc(request).users
    try:
        new = NewUser(
            posted_root_role(values["rootRole"]),
            email=values["email"] or None,
            username=values["username"] or None,
            name=values["name"] or None,
        )
        created, link = await call(request, users.invite_user, new, actor=viewer(request).actor)
    except FlagcoreError as error:
        return await _page(request, values=values, error=error, status=form_status(error))
    address = set_link(request, link.token)
    mailed = await mail_link(request, created, address, LinkKind.INVITATION)
    return await _page(request, link=(created.display_name, address), mail=mailed)


@routes.post("/ui/users/{id}/reset-link")
@page()
async def reset_link(request: web.Request) -> web.Response:
    _admins_only(request)
    users = svc(request).users
    user = await call(request, users.get_user, _user_id(request))
    link = await call(
        request, users.create_link_for, user.id, kind=LinkKind.RESET, actor=viewer(request).actor
    )
    address = set_link(request, link.token)
    mailed = await mail_link(request, user, address, LinkKind.RESET)
    return await _page(request, link=(user.display_name, address), mail=mailed)


@routes.post("/ui/users/{id}/end-sessions")
@page()
async def end_sessions(request: web.Request) -> web.Response:
    _admins_only(request)
    user = await call(request, svc(request).users.get_user, _user_id(request))
    await call(request, svc(request).sessions.end_all_of_user, user.id, actor=viewer(request).actor)
    return redirect(with_flash(request, "/ui/users", "sessions-ended", user.display_name))


@routes.post("/ui/users/{id}/root-role")
@page()
async def change_root_role(request: web.Request) -> web.Response:
    """A user's one root role becomes a predefined or a custom root role; a refusal draws
    the page again with the choice as posted."""
    _admins_only(request)
    user_id = _user_id(request)
    raw = form(request).get("rootRole", "")
    try:
        user = await call(
            request,
            svc(request).users.update_user,
            user_id,
            root_role=posted_root_role(raw),
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _page(request, changing=(user_id, raw), error=error, status=form_status(error))
    return redirect(with_flash(request, "/ui/users", "root-role-changed", user.display_name))


@routes.post("/ui/users/{id}/disabled")
@page()
async def set_disabled(request: web.Request) -> web.Response:
    """``disabled`` = ``yes`` or ``no``; disabling ends the user's sessions at once."""
    _admins_only(request)
    choice = form(request).get("disabled")
    if choice not in ("yes", "no"):
        raise InvalidInput("disabled is yes or no", [ErrorDetail("yes or no", "$.disabled")])
    user = await call(
        request,
        svc(request).users.update_user,
        _user_id(request),
        disabled=choice == "yes",
        actor=viewer(request).actor,
    )
    what = "user-disabled" if user.disabled else "user-enabled"
    return redirect(with_flash(request, "/ui/users", what, user.display_name))


@routes.post("/ui/users/{id}/delete")
@page()
async def delete_user(request: web.Request) -> web.Response:
    _admins_only(request)
    users = svc(request).users
    user = await call(request, users.get_user, _user_id(request))
    await call(request, users.delete_user, user.id, actor=viewer(request).actor)
    return redirect(with_flash(request, "/ui/users", "user-deleted", user.display_name))
