"""Editing a flag after it was made: its description, type and impression data (the
API's ``PUT``/``PATCH`` of a feature, through the same service call)."""

from __future__ import annotations

from aiohttp import web

from flagcore.errors import FlagcoreError
from flagcore_http.calls import call
from flagcore_http.ui.flash import with_flash
from flagcore_http.ui.forms import checked
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
from flagcore_http.ui.views.flag import flag_url
from flagcore_http.ui.views.flags import FLAG_TYPES

__all__ = ["routes"]

routes = web.RouteTableDef()

EDIT = "/ui/flags/{name}/edit"


@routes.get(EDIT)
@page()
async def edit_form(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    flag = (await call(request, svc(request).flags.get_flag, None, name)).flag
    values = {
        "description": flag.description or "",
        "type": flag.type,
        "impression_data": "on" if flag.impression_data else "",
    }
    return await _edit_page(request, name, values)


async def _edit_page(
    request: web.Request,
    name: str,
    values: dict[str, str],
    error: FlagcoreError | None = None,
) -> web.Response:
    flag = (await call(request, svc(request).flags.get_flag, None, name)).flag
    return render(
        request,
        "flag_edit.html",
        {
            "flag": flag,
            "values": values,
            "flag_types": FLAG_TYPES,
            "error": error.message if error else None,
            "errors": field_errors(error) if error else {},
        },
        status=form_status(error),
    )


@routes.post(EDIT)
@page()
async def save_flag(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    fields = form(request)
    values = {
        "description": fields.get("description", "").replace("\r\n", "\n"),
        "type": fields.get("type", ""),
        "impression_data": "on" if checked(fields, "impression_data") else "",
    }
    project = (await call(request, svc(request).flags.get_flag, None, name)).flag.project
    try:
        await call(
            request,
            svc(request).flags.update_flag,
            project,
            name,
            # Every field as typed: a blank description clears it (stored as null, as
            # Unleash stores it), a blank type is refused, never kept from before.
            type=values["type"],
            description=values["description"] if values["description"].strip() else "",
            impression_data=values["impression_data"] == "on",
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _edit_page(request, name, values, error)
    return redirect(with_flash(request, flag_url(name), "flag-saved", name))
