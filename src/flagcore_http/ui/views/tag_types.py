"""Tag types: the list with each one's description, create (on the list page), edit the
description, delete (refused, naming the flags, while a flag carries one)."""

from __future__ import annotations

from aiohttp import web

from flagcore.errors import FlagcoreError
from flagcore_http.calls import call
from flagcore_http.ui.flash import with_flash
from flagcore_http.ui.forms import optional_text
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

LIST = "/ui/tag-types"


async def _list_page(
    request: web.Request,
    *,
    values: dict[str, str] | None = None,
    error: FlagcoreError | None = None,
    refused: FlagcoreError | None = None,
    status: int = 200,
) -> web.Response:
    return render(
        request,
        "tag_types.html",
        {
            "tag_types": await call(request, svc(request).tags.list_tag_types),
            "values": values or {"name": "", "description": ""},
            "error": error.message if error else None,
            "errors": field_errors(error) if error else {},
            "refused": refused,
        },
        status=status,
    )


@routes.get(LIST)
@page()
async def list_tag_types(request: web.Request) -> web.Response:
    return await _list_page(request)


@routes.post(LIST)
@page()
async def create_tag_type(request: web.Request) -> web.Response:
    fields = form(request)
    values = {k: fields.get(k, "") for k in ("name", "description")}
    try:
        await call(
            request,
            svc(request).tags.create_tag_type,
            values["name"],
            optional_text(fields, "description"),
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _list_page(request, values=values, error=error, status=form_status(error))
    return redirect(with_flash(request, LIST, "tag-type-saved", values["name"]))


def _editor(
    request: web.Request, name: str, description: str, error: FlagcoreError | None = None
) -> web.Response:
    return render(
        request,
        "tag_type.html",
        {
            "name": name,
            "description": description,
            "error": error.message if error else None,
            "errors": field_errors(error) if error else {},
        },
        status=form_status(error),
    )


@routes.get(LIST + "/{name}")
@page()
async def edit_tag_type(request: web.Request) -> web.Response:
    found = await call(request, svc(request).tags.get_tag_type, request.match_info["name"])
    return _editor(request, found.name, found.description or "")


@routes.post(LIST + "/{name}")
@page()
async def update_tag_type(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    await call(request, svc(request).tags.get_tag_type, name)  # 404 first
    fields = form(request)
    try:
        await call(
            request,
            svc(request).tags.update_tag_type,
            name,
            optional_text(fields, "description"),
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return _editor(request, name, fields.get("description", ""), error)
    return redirect(with_flash(request, LIST, "tag-type-saved", name))


@routes.post(LIST + "/{name}/delete")
@page()
async def delete_tag_type(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    try:
        await call(request, svc(request).tags.delete_tag_type, name, actor=viewer(request).actor)
    except FlagcoreError as error:
        return await _list_page(request, refused=error, status=form_status(error))
    return redirect(with_flash(request, LIST, "tag-type-deleted", name))
