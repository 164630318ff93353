"""Projects: list, create, rename, delete (refused with the reason while flags remain)."""

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


async def _page(
    request: web.Request,
    *,
    values: dict[str, str] | None = None,
    error: FlagcoreError | None = None,
    failed: str | None = None,
    renaming: str | None = None,
    status: int = 200,
) -> web.Response:
    projects = await call(request, svc(request).projects.list_projects)
    counts: dict[str, int] = {}
    for flag in await call(request, svc(request).flags.list_flags):
        counts[flag.project] = counts.get(flag.project, 0) + 1
    return render(
        request,
        "projects.html",
        {
            "projects": projects,
            "counts": counts,
            "values": values or {},
            "failed": failed,  # which form the error belongs to
            "renaming": renaming,  # the project whose rename was refused (values: as typed)
            "error": error.message if error else None,
            "details": error.details if error else (),
            "errors": field_errors(error) if error else {},
        },
        status=status,
    )


@routes.get("/ui/projects")
@page()
async def list_projects(request: web.Request) -> web.Response:
    return await _page(request)


@routes.post("/ui/projects")
@page()
async def create_project(request: web.Request) -> web.Response:
    fields = form(request)
    values = {k: fields.get(k, "") for k in ("id", "name", "description")}
    try:
        await call(
            request,
            svc(request).projects.create_project,
            values["id"],
            values["name"],
            optional_text(fields, "description"),
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _page(
            request, values=values, error=error, failed="create", status=form_status(error)
        )
    return redirect(with_flash(request, "/ui/projects", "project-created", values["id"]))


@routes.post("/ui/projects/{id}/rename")
@page()
async def rename_project(request: web.Request) -> web.Response:
    project = request.match_info["id"]
    typed = {"name": form(request).get("name", "")}
    try:
        await call(
            request,
            svc(request).projects.update_project,
            project,
            name=typed["name"],
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _page(
            request,
            values=typed,
            error=error,
            failed="rename",
            renaming=project,
            status=form_status(error),
        )
    return redirect(with_flash(request, "/ui/projects", "project-renamed", project))


@routes.post("/ui/projects/{id}/delete")
@page()
async def delete_project(request: web.Request) -> web.Response:
    project = request.match_info["id"]
    try:
        await call(
            request, svc(request).projects.delete_project, project, actor=viewer(request).actor
        )
    except FlagcoreError as error:
        return await _page(request, error=error, failed="delete", status=form_status(error, 409))
    return redirect(with_flash(request, "/ui/projects", "project-deleted", project))
