"""A flag's parents on its page: add one (the parent, on or off, and variants), remove
one. The service replaces the whole list (``set_dependencies``, the API's ``PUT``), so a
form sends the list there is plus or minus one."""

from __future__ import annotations

from aiohttp import web

from flagcore.change_requests import ChangeAction
from flagcore.errors import Conflict, ErrorDetail, FlagcoreError, InvalidInput
from flagcore.model import Dependency
from flagcore_http.calls import call
from flagcore_http.ui.drafting import drafted, flag_draft_environment, on_the_form
from flagcore_http.ui.flash import with_flash
from flagcore_http.ui.pages import form, form_status, page, redirect, svc, viewer
from flagcore_http.ui.views.flag import flag_page, flag_url

__all__ = ["routes"]

routes = web.RouteTableDef()

DEPENDENCIES = "/ui/flags/{name}/dependencies"


@routes.post(DEPENDENCIES)
@page()
async def add_dependency(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    fields = form(request)
    typed = {
        "feature": fields.get("feature", ""),
        "enabled": fields.get("enabled", ""),
        "variants": fields.get("variants", "").replace("\r\n", "\n"),
    }
    flag = (await call(request, svc(request).flags.get_flag, None, name)).flag
    existing = list(flag.dependencies)
    try:
        added = _dependency(typed)
        if fields.get("_draft"):
            return await _drafted(request, flag.project, name, existing, added)
        await _save(request, flag.project, name, [*existing, added], len(existing))
    except FlagcoreError as error:
        return await flag_page(
            request, name, typed_dependency=typed, error=error, status=form_status(error)
        )
    return redirect(with_flash(request, flag_url(name), "dependencies-saved", name))


@routes.post(DEPENDENCIES + "/remove")
@page()
async def remove_dependency(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    parent = form(request).get("feature", "")
    flag = (await call(request, svc(request).flags.get_flag, None, name)).flag
    kept = [d for d in flag.dependencies if d.feature != parent]
    if form(request).get("_draft"):
        return await _drafted(request, flag.project, name, kept, None)
    await _save(request, flag.project, name, kept, None)
    return redirect(with_flash(request, flag_url(name), "dependencies-saved", name))


async def _drafted(
    request: web.Request,
    project: str,
    name: str,
    parents: list[Dependency],
    added: Dependency | None,
) -> web.Response:
    """The parents asked for, as a change in the person's draft (change requests are on
    in the project). A change request carries the flag's one parent, as Unleash's
    (``addDependency`` sets it, ``deleteDependency`` takes every parent away), so a list
    it cannot say is refused, never cut short."""
    config = await call(request, svc(request).change_requests.change_request_config, project)
    environment = flag_draft_environment(config)
    if environment is None:
        raise Conflict(
            f"change requests are not on in any environment of project '{project}': "
            "save the dependency directly"
        )
    wanted = [*parents, added] if added is not None else parents
    if len(wanted) > 1:
        others = ", ".join(d.feature for d in wanted if d is not added)
        raise Conflict(
            "A change request sets a flag's one parent (as Unleash's), and these parents "
            f"cannot be said in one: the flag would keep {others}. Remove them first.",
            [ErrorDetail("one parent per change request", "$.feature")],
        )
    try:
        if wanted:
            return await drafted(
                request, project, environment, name, ChangeAction.ADD_DEPENDENCY, wanted[0]
            )
        return await drafted(
            request, project, environment, name, ChangeAction.DELETE_DEPENDENCY, None
        )
    except FlagcoreError as error:
        raise on_the_form(error, [("$.payload[0]", "$"), ("$.payload", "$")]) from None


def _dependency(typed: dict[str, str]) -> Dependency:
    """The posted row; "on"/"off" come from a select, anything else is refused."""
    if typed["enabled"] not in ("on", "off"):
        raise InvalidInput(
            "Choose whether the parent must be on or off.",
            [ErrorDetail("on or off", "$.enabled")],
        )
    variants = tuple(v.strip() for v in typed["variants"].splitlines() if v.strip())
    return Dependency(typed["feature"], typed["enabled"] == "on", variants)


async def _save(
    request: web.Request, project: str, name: str, dependencies: list[Dependency], new: int | None
) -> None:
    try:
        await call(
            request,
            svc(request).dependencies.set_dependencies,
            project,
            name,
            dependencies,
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        raise _at_the_new_row(error, new) from None


def _at_the_new_row(error: FlagcoreError, new: int | None) -> FlagcoreError:
    """The service names the list (``$[2].feature``); the form holds one row, ``$.feature``."""
    if new is None:
        return error
    row = f"$[{new}]"
    details = [
        ErrorDetail(d.message, "$" + d.path[len(row) :])
        if d.path is not None and d.path.startswith(row)
        else d
        for d in error.details
    ]
    return type(error)(error.message, details)
