"""Safe to archive (issue 32): a project's flags that SDK usage and code scans agree
nothing needs, with the evidence, so a person archives them from their pages."""

from __future__ import annotations

from aiohttp import web

from flagcore import MAX_NAME_LENGTH
from flagcore_http.calls import call
from flagcore_http.keys import CONFIG
from flagcore_http.ui.pages import page, render, svc
from flagcore_http.usage_buffer import flush_usage

__all__ = ["routes"]

routes = web.RouteTableDef()


@routes.get("/ui/cleanup")
@page()
async def safe_to_archive(request: web.Request) -> web.Response:
    project = (request.query.get("project") or "default")[:MAX_NAME_LENGTH]  # echoed in a 404
    days = request.app[CONFIG].safe_to_archive_days
    await flush_usage(request.app)  # what SDKs posted to this node counts at once
    suggestions = await call(request, svc(request).cleanup.safe_to_archive, project, days=days)
    projects = await call(request, svc(request).projects.list_projects)
    return render(
        request,
        "cleanup.html",
        {"project": project, "projects": projects, "suggestions": suggestions, "days": days},
    )
