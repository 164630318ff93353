"""Context fields: the registry's list, its create and edit form, refused deletions.

The form is built on the same service part as ``/api/admin/context``; a refused form is
redrawn as typed, legal-value rows included.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from flagcore.entities import ContextField, LegalValue
from flagcore.errors import FlagcoreError
from flagcore.service import BUILT_IN_CONTEXT_FIELDS
from flagcore_http.calls import call
from flagcore_http.ui.flash import with_flash
from flagcore_http.ui.forms import Row, checked, legal_value_rows, optional_text
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

__all__ = ["constraint_vocabulary", "routes"]

routes = web.RouteTableDef()

LIST = "/ui/context"


async def _list_page(
    request: web.Request, error: FlagcoreError | None = None, status: int = 200
) -> web.Response:
    fields = await call(request, svc(request).context_fields.list_context_fields)
    return render(
        request,
        "context_fields.html",
        {
            "fields": fields,
            "built_in": BUILT_IN_CONTEXT_FIELDS,
            "error": error.message if error else None,
            "details": error.details if error else (),
        },
        status=status,
    )


async def constraint_vocabulary(request: web.Request) -> dict[str, Any]:
    """What a constraint editor offers: every registered field's name (suggested for
    the context input), the legal values of those that have some (a list to choose
    from instead of free text), and the stickiness choices."""
    fields = await call(request, svc(request).context_fields.list_context_fields)
    return {
        "context_field_names": [f.name for f in fields],
        "legal_values": {f.name: f.legal_values for f in fields if f.legal_values},
        # Suggested for a rollout's or a variant's stickiness: Unleash's two keywords and
        # the fields offered for stickiness (any field may still be typed).
        "stickiness_choices": ["default", "random", *(f.name for f in fields if f.stickiness)],
    }


@routes.get(LIST)
@page()
async def list_context_fields(request: web.Request) -> web.Response:
    return await _list_page(request)


def _editor(
    request: web.Request,
    values: dict[str, str],
    rows: list[Row],
    *,
    editing: str | None,
    extra: int = 1,
    error: FlagcoreError | None = None,
) -> web.Response:
    return render(
        request,
        "context_field.html",
        {
            "values": values,
            "rows": rows,
            "extra": extra,
            "editing": editing,
            "error": error.message if error else None,
            "errors": field_errors(error) if error else {},
        },
        status=form_status(error),
    )


@routes.get(LIST + "/new")
@page()
async def new_context_field(request: web.Request) -> web.Response:
    return _editor(request, {"stickiness": ""}, [], editing=None)


@routes.get(LIST + "/{name}")
@page()
async def edit_context_field(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    field = await call(request, svc(request).context_fields.get_context_field, name)
    values = {
        "name": field.name,
        "description": field.description or "",
        "stickiness": "on" if field.stickiness else "",
    }
    rows = [{"value": v.value, "description": v.description or ""} for v in field.legal_values]
    return _editor(request, values, rows, editing=field.name)


async def _save(request: web.Request, editing: str | None) -> web.Response:
    fields = form(request)
    name = editing if editing is not None else fields.get("name", "")
    values = {
        "name": name,
        "description": fields.get("description", ""),
        "stickiness": fields.get("stickiness", ""),
    }
    rows = legal_value_rows(fields)
    if fields.get("_more"):
        return _editor(request, values, rows, editing=editing, extra=2)
    legal = tuple(LegalValue(r["value"], r["description"] or None) for r in rows)
    description = optional_text(fields, "description")
    sticky = checked(fields, "stickiness")
    parts = svc(request).context_fields
    try:
        if editing is None:
            field = ContextField(name, description, legal, sticky)
            await call(request, parts.create_context_field, field, actor=viewer(request).actor)
        else:
            await call(
                request,
                parts.update_context_field,
                editing,
                description=description,
                legal_values=legal,
                stickiness=sticky,
                actor=viewer(request).actor,
            )
    except FlagcoreError as error:
        return _editor(request, values, rows, editing=editing, error=error)
    return redirect(with_flash(request, LIST, "context-field-saved", name))


@routes.post(LIST + "/new")
@page()
async def create_context_field(request: web.Request) -> web.Response:
    return await _save(request, None)


@routes.post(LIST + "/{name}")
@page()
async def update_context_field(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    await call(request, svc(request).context_fields.get_context_field, name)
    return await _save(request, name)


@routes.post(LIST + "/{name}/delete")
@page()
async def delete_context_field(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    await call(request, svc(request).context_fields.get_context_field, name)  # 404 first
    try:
        await call(
            request,
            svc(request).context_fields.delete_context_field,
            name,
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _list_page(request, error, form_status(error, 409))
    return redirect(with_flash(request, LIST, "context-field-deleted", name))
