"""Environments: list in order, create, clone, rename, move up or down, turn on or off,
change the type, and delete after a confirmation naming what goes with it (no script:
plain forms)."""

from __future__ import annotations

from aiohttp import web

from flagcore.entities import Environment
from flagcore.errors import FlagcoreError
from flagcore.service import ENVIRONMENT_TYPES, UNSCOPED_ENVIRONMENT
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
from flagcore_http.usage_buffer import flush_usage

__all__ = ["routes"]

routes = web.RouteTableDef()

ENVIRONMENTS = "/ui/environments"
ONE = ENVIRONMENTS + "/{name}"


async def _page(
    request: web.Request,
    *,
    values: dict[str, str] | None = None,
    error: FlagcoreError | None = None,
    failed: str | None = None,
    editing: str | None = None,
) -> web.Response:
    environments = await call(request, svc(request).environments.list_environments)
    return render(
        request,
        "environments.html",
        {
            "environments": environments,
            "types": ENVIRONMENT_TYPES,
            "unscoped": UNSCOPED_ENVIRONMENT,  # never renamed: not offered
            "values": values or {},
            "failed": failed,  # which form the error belongs to: create, type, move, ...
            "editing": editing,  # the environment whose type form was refused (as typed)
            "error": error.message if error else None,
            "details": error.details if error else (),
            "errors": field_errors(error) if error else {},
        },
        status=form_status(error),
    )


@routes.get(ENVIRONMENTS)
@page()
async def list_environments(request: web.Request) -> web.Response:
    return await _page(request)


@routes.post(ENVIRONMENTS)
@page()
async def create_environment(request: web.Request) -> web.Response:
    fields = form(request)
    values = {k: fields.get(k, "") for k in ("name", "type")}
    try:
        await call(
            request,
            svc(request).environments.create_environment,
            values["name"],
            values["type"],
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _page(request, values=values, error=error, failed="create")
    return redirect(with_flash(request, ENVIRONMENTS, "environment-created", values["name"]))


@routes.post(ENVIRONMENTS + "/clone")
@page()
async def clone_environment(request: web.Request) -> web.Response:
    """A copy of an environment with every flag's rules in it (new strategy ids)."""
    fields = form(request)
    values = {
        "source": fields.get("source", ""),
        "clone_name": fields.get("clone_name", ""),
        "clone_type": fields.get("clone_type", ""),
        "clone_permissions": "on" if fields.get("clone_permissions") == "on" else "",
    }
    try:
        await call(
            request,
            svc(request).environments.clone_environment,
            values["source"],
            values["clone_name"],
            values["clone_type"],
            clone_permissions=values["clone_permissions"] == "on",
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _page(request, values=values, error=error, failed="clone")
    return redirect(with_flash(request, ENVIRONMENTS, "environment-created", values["clone_name"]))


@routes.post(ENVIRONMENTS + "/rename")
@page()
async def rename_environment(request: web.Request) -> web.Response:
    """flagcore's own rename (`Environments.rename_environment`): the environment chosen
    and its new name; a refusal redraws both as typed."""
    fields = form(request)
    values = {
        "rename_source": fields.get("rename_source", ""),
        "new_name": fields.get("new_name", ""),
    }
    await flush_usage(request.app)  # SDK usage this node holds moves with the rest
    try:
        await call(
            request,
            svc(request).environments.rename_environment,
            values["rename_source"],
            values["new_name"],
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _page(request, values=values, error=error, failed="rename")
    return redirect(with_flash(request, ENVIRONMENTS, "environment-renamed", values["new_name"]))


@routes.post(ONE + "/type")
@page()
async def change_type(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    typed = {"type": form(request).get("type", "")}
    try:
        await call(
            request,
            svc(request).environments.update_environment,
            name,
            type=typed["type"],
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _page(request, values=typed, error=error, failed="type", editing=name)
    return redirect(with_flash(request, ENVIRONMENTS, "environment-saved", name))


@routes.post(ONE + "/move")
@page()
async def move(request: web.Request) -> web.Response:
    """Up or down one place: every environment is numbered again 1, 2, 3… in the new
    order, so ties in the stored orders cannot make a click do nothing."""
    name = request.match_info["name"]
    direction = form(request).get("direction", "")
    environments = await call(request, svc(request).environments.list_environments)
    names = [e.name for e in environments]
    if name in names and direction in ("up", "down"):
        at = names.index(name)
        to = at - 1 if direction == "up" else at + 1
        if 0 <= to < len(names):
            names[at], names[to] = names[to], names[at]
    orders = {n: i + 1 for i, n in enumerate(names)}
    if name not in names:
        orders[name] = 0  # the service names what is missing
    try:
        await call(
            request,
            svc(request).environments.set_environment_sort_orders,
            _changed(environments, orders),
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _page(request, error=error, failed="move")
    return redirect(ENVIRONMENTS)


def _changed(environments: list[Environment], orders: dict[str, int]) -> dict[str, int]:
    """Only the orders that change (each change is an event)."""
    kept = {e.name: e.sort_order for e in environments}
    return {name: order for name, order in orders.items() if kept.get(name) != order}


@routes.post(ONE + "/toggle")
@page()
async def toggle(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    enabled = form(request).get("enabled") == "true"
    try:
        await call(
            request,
            svc(request).environments.toggle_environment,
            name,
            enabled,
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _page(request, error=error, failed="toggle")
    return redirect(with_flash(request, ENVIRONMENTS, "environment-saved", name))


@routes.get(ONE + "/delete")
@page()
async def confirm_delete(request: web.Request) -> web.Response:
    usage = await call(
        request, svc(request).environments.environment_usage, request.match_info["name"]
    )
    return render(request, "environment_delete.html", {"usage": usage})


@routes.post(ONE + "/delete")
@page()
async def delete(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    typed = form(request).get("confirm", "")
    error: FlagcoreError | None = None
    if typed == name:
        try:
            await call(
                request,
                svc(request).environments.delete_environment,
                name,
                actor=viewer(request).actor,
            )
        except FlagcoreError as refused:
            error = refused
        else:
            return redirect(with_flash(request, ENVIRONMENTS, "environment-deleted", name))
    usage = await call(request, svc(request).environments.environment_usage, name)
    return render(
        request,
        "environment_delete.html",
        {
            "usage": usage,
            "typed": typed,
            "error": error.message if error else None,
            "mismatch": error is None,
        },
        status=form_status(error) if error else 400,
    )
