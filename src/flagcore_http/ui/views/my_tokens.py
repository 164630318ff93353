"""My tokens: the signed-in person's personal access tokens (list, create with the secret
shown once, delete). A token acts as its owner on the admin API. Only a person has them:
the UI signed in with an admin token has none."""

from __future__ import annotations

import datetime as dt

from aiohttp import web

from flagcore.errors import ErrorDetail, FlagcoreError, Forbidden, InvalidInput
from flagcore.people import User
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

__all__ = ["expiry_of_day", "routes"]

routes = web.RouteTableDef()

MY_TOKENS = "/ui/my-tokens"


def expiry_of_day(text: str) -> dt.datetime:
    """A form's expiry date (``YYYY-MM-DD``): the token works to the end of that day, UTC."""
    try:
        day = dt.date.fromisoformat(text) if len(text) == 10 else None
    except ValueError:
        day = None
    if day is None:
        raise InvalidInput(
            "Choose the day the token expires.",
            [ErrorDetail("a date such as 2027-01-31", "$.expiresAt")],
        )
    return dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), dt.UTC)


def _owner(request: web.Request) -> User:
    user = viewer(request).user
    if user is None:
        raise Forbidden(
            "Personal access tokens belong to a person: sign in with your email or "
            "username and password to have some."
        )
    return user


async def _page(
    request: web.Request,
    *,
    created: CreatedPersonalToken | None = None,
    values: dict[str, str] | None = None,
    error: FlagcoreError | None = None,
    status: int = 200,
) -> web.Response:
    owner = _owner(request)
    return render(
        request,
        "my_tokens.html",
        {
            "tokens": await call(request, svc(request).personal_tokens.list_of, owner.id),
            "now": svc(request).clock(),
            "created": created,  # its secret: shown on this answer only
            "values": values or {"description": "", "expiresAt": ""},
            "error": error.message if error else None,
            "errors": field_errors(error) if error else {},
        },
        status=status,
    )


@routes.get(MY_TOKENS)
@page()
async def list_my_tokens(request: web.Request) -> web.Response:
    return await _page(request)


@routes.post(MY_TOKENS)
@page()
async def create_my_token(request: web.Request) -> web.Response:
    owner = _owner(request)
    fields = form(request)
    values = {key: fields.get(key, "") for key in ("description", "expiresAt")}
    try:
        created = await call(
            request,
            svc(request).personal_tokens.create_personal_token,
            owner.id,
            values["description"],
            expiry_of_day(values["expiresAt"]),
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _page(request, values=values, error=error, status=form_status(error))
    return await _page(request, created=created)


@routes.post(MY_TOKENS + "/{id}/delete")
@page()
async def delete_my_token(request: web.Request) -> web.Response:
    owner = _owner(request)
    raw = request.match_info["id"]
    if not raw.isascii() or not raw.isdigit() or len(raw) > 18:
        raise InvalidInput("not a token id", [ErrorDetail("not a token id", "$.id")])
    await call(
        request,
        svc(request).personal_tokens.delete_personal_token,
        owner.id,
        int(raw),
        actor=viewer(request).actor,
    )
    return redirect(with_flash(request, MY_TOKENS, "personal-token-deleted", raw))
