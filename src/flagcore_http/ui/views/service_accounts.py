"""Service accounts: list them with their tokens, create one (name, username, root role),
make a token (its secret shown once), delete a token or an account. Admin only, as the
Users page (a token, or ``--auth none``, acts as Admin)."""

from __future__ import annotations

from aiohttp import web

from flagcore.errors import ErrorDetail, FlagcoreError, Forbidden, InvalidInput
from flagcore.people import RootRole, User
from flagcore.permissions import Permission
from flagcore.service import CreatedPersonalToken
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
from flagcore_http.ui.root_roles import posted_root_role, root_role_names, root_role_options
from flagcore_http.ui.views.my_tokens import expiry_of_day

__all__ = ["routes"]

routes = web.RouteTableDef()

PAGE = "/ui/service-accounts"
_ACCOUNT_FIELDS = ("name", "username", "rootRole")
_TOKEN_FIELDS = ("description", "expiresAt")


def _admins_only(request: web.Request) -> None:
    if not viewer(request).actor.may(Permission.ADMIN):
        raise Forbidden("Managing service accounts needs the Admin root role.")


def _id(request: web.Request, name: str = "id") -> int:
    raw = request.match_info[name]
    if not raw.isascii() or not raw.isdigit() or len(raw) > 18:
        raise InvalidInput(f"not an {name}", [ErrorDetail(f"not an {name}", f"/params/{name}")])
    return int(raw)


async def _page(
    request: web.Request,
    *,
    created: tuple[User, CreatedPersonalToken] | None = None,
    values: dict[str, str] | None = None,
    token_values: tuple[int, dict[str, str]] | None = None,
    error: FlagcoreError | None = None,
    token_error: FlagcoreError | None = None,
    edit_values: tuple[int, dict[str, str]] | None = None,
    edit_error: FlagcoreError | None = None,
    status: int = 200,
) -> web.Response:
    """``token_values``, ``edit_values``: a refused token or account form, for the
    account of that id."""
    custom = await call(request, svc(request).roles.custom_root_roles)
    return render(
        request,
        "service_accounts.html",
        {
            "accounts": await call(request, svc(request).service_accounts.list_accounts),
            "roles": root_role_options(custom),
            "role_names": root_role_names(custom),
            "now": svc(request).clock(),
            "created": created,  # (account, token with its secret): shown on this answer only
            "values": values or {"name": "", "username": "", "rootRole": RootRole.VIEWER.value},
            "error": error.message if error else None,
            "errors": field_errors(error) if error else {},
            "token_for": token_values[0] if token_values else None,
            "token_values": token_values[1] if token_values else {},
            "token_error": token_error.message if token_error else None,
            "token_errors": field_errors(token_error) if token_error else {},
            "edit_for": edit_values[0] if edit_values else None,
            "edit_values": edit_values[1] if edit_values else {},
            "edit_error": edit_error.message if edit_error else None,
            "edit_errors": field_errors(edit_error) if edit_error else {},
        },
        status=status,
    )


@routes.get(PAGE)
@page()
async def list_service_accounts(request: web.Request) -> web.Response:
    _admins_only(request)
    return await _page(request)


@routes.post(PAGE)
@page()
async def create_service_account(request: web.Request) -> web.Response:
    _admins_only(request)
    fields = form(request)
    values = {key: fields.get(key, "") for key in _ACCOUNT_FIELDS}
    try:
        account = await call(
            request,
            svc(request).service_accounts.create_service_account,
            name=values["name"],
            username=values["username"],
            root_role=posted_root_role(values["rootRole"]),
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _page(request, values=values, error=error, status=form_status(error))
    return redirect(with_flash(request, PAGE, "service-account-created", account.display_name))


@routes.post(PAGE + "/{id}")
@page()
async def update_service_account(request: web.Request) -> web.Response:
    """Rename an account, change its username or its root role (its tokens act with the
    new role from their next request)."""
    _admins_only(request)
    account_id = _id(request)
    fields = form(request)
    values = {key: fields.get(key, "") for key in _ACCOUNT_FIELDS}
    try:
        if values["rootRole"] not in {role.value for role in RootRole}:
            raise InvalidInput("Choose a root role.", [ErrorDetail("choose one", "$.rootRole")])
        account = await call(
            request,
            svc(request).service_accounts.update_service_account,
            account_id,
            name=values["name"],
            username=values["username"],
            root_role=RootRole(values["rootRole"]),
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        edited = (account_id, values)
        return await _page(request, edit_values=edited, edit_error=error, status=400)
    return redirect(with_flash(request, PAGE, "service-account-saved", account.display_name))


@routes.post(PAGE + "/{id}/tokens")
@page()
async def create_token(request: web.Request) -> web.Response:
    _admins_only(request)
    account_id = _id(request)
    accounts = svc(request).service_accounts
    account = await call(request, accounts.get_account, account_id)
    fields = form(request)
    values = {key: fields.get(key, "") for key in _TOKEN_FIELDS}
    try:
        created = await call(
            request,
            accounts.create_service_account_token,
            account_id,
            values["description"],
            expiry_of_day(values["expiresAt"]),
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _page(
            request, token_values=(account_id, values), token_error=error, status=form_status(error)
        )
    return await _page(request, created=(account, created))


@routes.post(PAGE + "/{id}/tokens/{tokenId}/delete")
@page()
async def delete_token(request: web.Request) -> web.Response:
    _admins_only(request)
    token_id = _id(request, "tokenId")
    await call(
        request,
        svc(request).service_accounts.delete_service_account_token,
        _id(request),
        token_id,
        actor=viewer(request).actor,
    )
    return redirect(with_flash(request, PAGE, "service-account-token-deleted", str(token_id)))


@routes.post(PAGE + "/{id}/delete")
@page()
async def delete_service_account(request: web.Request) -> web.Response:
    _admins_only(request)
    accounts = svc(request).service_accounts
    account = await call(request, accounts.get_account, _id(request))
    await call(request, accounts.delete_service_account, account.id, actor=viewer(request).actor)
    return redirect(with_flash(request, PAGE, "service-account-deleted", account.display_name))
