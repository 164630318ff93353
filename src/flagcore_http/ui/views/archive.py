"""Archived flags: revive one, or delete it for good after a confirmation."""

from __future__ import annotations

from aiohttp import web

from flagcore.errors import Conflict
from flagcore_http.calls import call
from flagcore_http.ui.flash import with_flash
from flagcore_http.ui.pages import form, page, redirect, render, svc, viewer
from flagcore_http.ui.views.flag import flag_url

__all__ = ["routes"]

routes = web.RouteTableDef()


@routes.get("/ui/archive")
@page()
async def archived(request: web.Request) -> web.Response:
    flags = await call(request, svc(request).archive.list_archived_flags)
    return render(request, "archive.html", {"flags": flags})


@routes.post("/ui/archive/{name}/revive")
@page()
async def revive(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    await call(request, svc(request).archive.revive_flag, name, actor=viewer(request).actor)
    return redirect(with_flash(request, flag_url(name), "flag-revived", name))


@routes.get("/ui/archive/{name}/delete")
@page()
async def confirm_delete(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    flags = {f.flag.name: f for f in await call(request, svc(request).archive.list_archived_flags)}
    if name not in flags:
        raise Conflict(f'"{name}" is not an archived flag')
    return render(request, "archive_delete.html", {"flag": flags[name].flag})


@routes.post("/ui/archive/{name}/delete")
@page()
async def delete(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    if form(request).get("confirm") != name:
        flags = {
            f.flag.name: f for f in await call(request, svc(request).archive.list_archived_flags)
        }
        if name not in flags:
            raise Conflict(f'"{name}" is not an archived flag')
        return render(
            request,
            "archive_delete.html",
            {
                "flag": flags[name].flag,
                "typed": form(request).get("confirm", ""),
                "error": "Type the flag's name to confirm.",
            },
            status=400,
        )
    await call(request, svc(request).archive.delete_flag, name, actor=viewer(request).actor)
    return redirect(with_flash(request, "/ui/archive", "flag-deleted", name))
