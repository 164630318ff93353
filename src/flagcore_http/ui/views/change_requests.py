"""Change requests in the UI (issue 30): a project's requests, one request with its
changes, conflicts, reviews and comments, and the buttons that move it on (the same
service rules as the API: the author cannot approve, approvers cannot be the author)."""

from __future__ import annotations

from aiohttp import web

from flagcore.change_requests import CLOSED_STATES
from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.wire import ChangeRequestPreviewAnswer
from flagcore_http.calls import call
from flagcore_http.context_sampling import flush_context_samples
from flagcore_http.preview_scoring import scored_in_turn
from flagcore_http.routes.change_requests import moved
from flagcore_http.ui.flash import with_flash
from flagcore_http.ui.pages import form, page, redirect, render, svc, viewer

__all__ = ["change_request_url", "routes"]

routes = web.RouteTableDef()

LIST = "/ui/change-requests"
ONE = LIST + "/{project_id}/{id}"


def change_request_url(project: str, request_id: int) -> str:
    return f"{LIST}/{project}/{request_id}"


def _id(request: web.Request) -> int:
    raw = request.match_info["id"]
    if not raw.isdigit() or len(raw) > 18:
        raise InvalidInput("no such change request", [ErrorDetail("not a number", "$.id")])
    return int(raw)


@routes.get(LIST)
@page()
async def change_requests(request: web.Request) -> web.Response:
    projects = await call(request, svc(request).projects.list_projects)
    chosen = request.query.get("project") or (projects[0].id if projects else "default")
    views = await call(
        request, svc(request).change_requests.open_change_requests, chosen, viewer(request).actor
    )
    closed = [
        v
        for v in await call(request, svc(request).change_requests.list_change_requests, chosen)
        if all(v.request.id != o.request.id for o in views)
    ]
    return render(
        request,
        "change_requests.html",
        {"projects": projects, "project": chosen, "open": views, "closed": closed},
    )


@routes.get(ONE)
@page()
async def change_request(request: web.Request) -> web.Response:
    project = request.match_info["project_id"]
    view = await call(
        request, svc(request).change_requests.get_change_request, project, _id(request)
    )
    preview = None
    if view.request.state not in CLOSED_STATES:
        preview = await _previewed(request, project, view.request.id)
    return render(
        request, "change_request.html", {"view": view, "cr": view.request, "preview": preview}
    )


async def _previewed(
    request: web.Request, project: str, request_id: int
) -> ChangeRequestPreviewAnswer:
    """Who the request would flip, per flag, before anyone approves it: read on the store
    worker, scored off it, on this node's latest sample."""
    await flush_context_samples(request.app)
    read = await call(
        request,
        svc(request).change_request_previews.change_request_preview_input,
        project,
        request_id,
    )
    return await scored_in_turn(request.app, read.scored)


@routes.post(ONE + "/state")
@page()
async def move(request: web.Request) -> web.Response:
    project, request_id = request.match_info["project_id"], _id(request)
    posted = form(request)
    done = await moved(
        request,
        viewer(request).actor,
        project,
        request_id,
        posted.get("state", ""),
        comment=posted.get("comment") or None,
    )
    url = change_request_url(project, request_id)
    return redirect(with_flash(request, url, "change-request-moved", done.state.value))


@routes.post(ONE + "/comments")
@page()
async def comment(request: web.Request) -> web.Response:
    project, request_id = request.match_info["project_id"], _id(request)
    await call(
        request,
        svc(request).change_requests.comment_change_request,
        project,
        request_id,
        form(request).get("text", ""),
        actor=viewer(request).actor,
    )
    url = change_request_url(project, request_id)
    return redirect(with_flash(request, url, "change-request-commented", str(request_id)))
