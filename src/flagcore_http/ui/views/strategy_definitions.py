"""Strategy definitions: the built-in strategies and the custom ones; create and edit a
custom one (title, description, parameter rows), deprecate or reactivate it, delete it
(refused, naming each flag strategy, while one uses it)."""

from __future__ import annotations

from aiohttp import web

from flagcore.entities import StrategyDefinition, StrategyParameter
from flagcore.errors import FlagcoreError
from flagcore.service import BUILTIN_DEFINITIONS
from flagcore_http.calls import call
from flagcore_http.errors import status_of
from flagcore_http.ui.flash import with_flash
from flagcore_http.ui.forms import Row, optional_text, parameter_rows
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

__all__ = ["PARAMETER_TYPES", "routes"]

routes = web.RouteTableDef()

LIST = "/ui/strategies"
# Unleash's parameter types: what its strategy editor draws for each.
PARAMETER_TYPES = ("string", "percentage", "list", "number", "boolean")


async def _list_page(
    request: web.Request, refused: FlagcoreError | None = None, status: int = 200
) -> web.Response:
    definitions = svc(request).strategy_definitions
    return render(
        request,
        "strategy_definitions.html",
        {
            "definitions": await call(request, definitions.list_strategy_definitions),
            "built_in": BUILTIN_DEFINITIONS,
            "refused": refused,
        },
        status=status,
    )


@routes.get(LIST)
@page()
async def list_strategy_definitions(request: web.Request) -> web.Response:
    return await _list_page(request)


def _editor(
    request: web.Request,
    values: dict[str, str],
    rows: list[Row],
    *,
    editing: str | None,
    extra: int = 1,
    error: FlagcoreError | None = None,
    read_only: bool = False,
) -> web.Response:
    return render(
        request,
        "strategy_definition.html",
        {
            "values": values,
            "rows": rows,
            "extra": extra,
            "editing": editing,
            "read_only": read_only,
            "parameter_types": PARAMETER_TYPES,
            "error": error.message if error else None,
            "errors": field_errors(error) if error else {},
        },
        status=form_status(error),
    )


@routes.get(LIST + "/new")
@page()
async def new_strategy_definition(request: web.Request) -> web.Response:
    return _editor(request, {"name": "", "title": "", "description": ""}, [], editing=None)


@routes.get(LIST + "/{name}")
@page()
async def edit_strategy_definition(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    found = await call(request, svc(request).strategy_definitions.get_strategy_definition, name)
    values = {
        "name": found.name,
        "title": found.title or "",
        "description": found.description or "",
    }
    rows = [
        {
            "name": p.name,
            "type": p.type,
            "description": p.description,
            "required": "on" if p.required else "",
        }
        for p in found.parameters
    ]
    return _editor(request, values, rows, editing=found.name, read_only=not found.editable)


async def _save(request: web.Request, editing: str | None) -> web.Response:
    fields = form(request)
    name = editing if editing is not None else fields.get("name", "")
    values = {"name": name, **{k: fields.get(k, "") for k in ("title", "description")}}
    rows = parameter_rows(fields)
    if fields.get("_more"):
        return _editor(request, values, rows, editing=editing, extra=2)
    parameters = tuple(
        StrategyParameter(
            row["name"].strip(),
            row["type"],
            row["description"],
            required=row["required"] == "on",
        )
        for row in rows
    )
    definition = StrategyDefinition(
        name,
        optional_text(fields, "description"),
        parameters,
        title=optional_text(fields, "title"),
    )
    parts = svc(request).strategy_definitions
    method = (
        parts.create_strategy_definition if editing is None else parts.update_strategy_definition
    )
    try:
        await call(request, method, definition, actor=viewer(request).actor)
    except FlagcoreError as error:
        return _editor(request, values, rows, editing=editing, error=error)
    return redirect(with_flash(request, LIST, "strategy-definition-saved", name))


@routes.post(LIST + "/new")
@page()
async def create_strategy_definition(request: web.Request) -> web.Response:
    return await _save(request, None)


@routes.post(LIST + "/{name}")
@page()
async def update_strategy_definition(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    await call(request, svc(request).strategy_definitions.get_strategy_definition, name)
    return await _save(request, name)


async def _act(request: web.Request, action: str) -> web.Response:
    name = request.match_info["name"]
    parts = svc(request).strategy_definitions
    method = {
        "deprecate": parts.deprecate_strategy_definition,
        "reactivate": parts.reactivate_strategy_definition,
        "delete": parts.delete_strategy_definition,
    }[action]
    try:
        await call(request, method, name, actor=viewer(request).actor)
    except FlagcoreError as error:
        return await _list_page(request, error, status_of(error)[0])
    return redirect(with_flash(request, LIST, f"strategy-definition-{action}d", name))


@routes.post(LIST + "/{name}/deprecate")
@page()
async def deprecate_strategy_definition(request: web.Request) -> web.Response:
    return await _act(request, "deprecate")


@routes.post(LIST + "/{name}/reactivate")
@page()
async def reactivate_strategy_definition(request: web.Request) -> web.Response:
    return await _act(request, "reactivate")


@routes.post(LIST + "/{name}/delete")
@page()
async def delete_strategy_definition(request: web.Request) -> web.Response:
    return await _act(request, "delete")
