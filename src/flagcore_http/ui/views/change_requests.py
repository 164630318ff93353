"""Change requests in the UI (issue 30): a project's requests, one request with its
changes, conflicts, reviews and comments, and the buttons that move it on (the same
service rules as the API: the author cannot approve, approvers cannot be the author)."""

from __future__ import annotations

import datetime as dt
import re
import urllib.parse

import attrs
from aiohttp import web

from flagcore.change_requests import CLOSED_STATES, ChangeRequestState
from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput
from flagcore.wire import ChangeRequestPreviewAnswer
from flagcore_http.calls import call
from flagcore_http.context_sampling import flush_context_samples
from flagcore_http.preview_scoring import scored_in_turn
from flagcore_http.routes.change_requests import moved
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

__all__ = [
    "EDITABLE_STATES",
    "ONE",
    "TypedEdits",
    "change_request_url",
    "request_id_of",
    "request_page",
    "routes",
]

routes = web.RouteTableDef()

LIST = "/ui/change-requests"
ONE = LIST + "/{project_id}/{id}"


EDITABLE_STATES = frozenset(
    {ChangeRequestState.DRAFT, ChangeRequestState.IN_REVIEW, ChangeRequestState.APPROVED}
)
"""States in which the author may still change a request (the service's rule)."""


def change_request_url(project: str, request_id: int) -> str:
    return f"{LIST}/{project}/{request_id}"


def request_id_of(request: web.Request) -> int:
    raw = request.match_info["id"]
    if not raw.isdigit() or len(raw) > 18:
        raise InvalidInput("no such change request", [ErrorDetail("not a number", "$.id")])
    return int(raw)


@routes.get(LIST)
@page()
async def change_requests(request: web.Request) -> web.Response:
    return await _list_page(request, request.query.get("project"))


async def _list_page(
    request: web.Request,
    project: str | None,
    *,
    typed: TypedConfig | None = None,
    error: FlagcoreError | None = None,
) -> web.Response:
    """A project's requests, its schedules (pending and failed), and its settings per
    environment; after a refused settings form, that environment's row as typed."""
    projects = await call(request, svc(request).projects.list_projects)
    chosen = project or (projects[0].id if projects else "default")
    parts = svc(request).change_requests
    views = await call(request, parts.open_change_requests, chosen, viewer(request).actor)
    closed = [
        v
        for v in await call(request, parts.list_change_requests, chosen)
        if all(v.request.id != o.request.id for o in views)
    ]
    scheduled = await call(request, parts.scheduled_change_requests, chosen)
    config = await call(request, parts.change_request_config, chosen)
    return render(
        request,
        "change_requests.html",
        {
            "projects": projects,
            "project": chosen,
            "open": views,
            "closed": closed,
            "scheduled": scheduled,
            "config": config,
            "typed": typed,
            "error": error.message if error else None,
            "errors": field_errors(error) if error else {},
        },
        status=form_status(error),
    )


@attrs.frozen
class TypedConfig:
    """The settings form of one environment as posted (shown again after a refusal)."""

    environment: str
    enabled: bool
    required_approvals: str


@routes.post(LIST + "/{project_id}/environments/{environment}/config")
@page()
async def configure(request: web.Request) -> web.Response:
    """Change requests on or off in one environment, with the approvals they need: the
    API's ``PUT .../change-requests/config``, through the same service method."""
    project, environment = request.match_info["project_id"], request.match_info["environment"]
    fields = form(request)
    typed = TypedConfig(
        environment, checked(fields, "enabled"), fields.get("requiredApprovals", "")
    )
    try:
        await call(
            request,
            svc(request).change_requests.set_change_request_config,
            project,
            environment,
            enabled=typed.enabled,
            required_approvals=_approvals(typed.required_approvals),
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _list_page(request, project, typed=typed, error=error)
    url = f"{LIST}?{urllib.parse.urlencode({'project': project})}"
    return redirect(with_flash(request, url, "change-request-config-saved", environment))


def _approvals(text: str) -> int:
    """The typed number of approvals; blank or not a whole number is refused (never a
    default), the range is the service's rule."""
    text = text.strip()
    if not (text.isascii() and text.isdigit()) or len(text) > 3:
        message = "required" if not text else "a whole number"
        raise InvalidInput(
            "Required approvals must be a whole number.",
            [ErrorDetail(message, "$.requiredApprovals")],
        )
    return int(text)


@routes.get(ONE)
@page()
async def change_request(request: web.Request) -> web.Response:
    return await request_page(request, request.match_info["project_id"], request_id_of(request))


@attrs.frozen
class TypedEdits:
    """A refused form of the request page as posted: its title, its reviewers (user ids
    as typed), one change's payload (the change's id and the JSON text), or the time
    it was to be applied at."""

    title: str | None = None
    reviewers: tuple[str, ...] | None = None
    change: tuple[int, str] | None = None
    scheduled_at: str | None = None


async def request_page(
    request: web.Request,
    project: str,
    request_id: int,
    *,
    typed: TypedEdits | None = None,
    error: FlagcoreError | None = None,
) -> web.Response:
    """One request with its changes, preview, reviews and the forms its state allows;
    after a refused form, that form as typed with the error (403 when not allowed)."""
    parts = svc(request).change_requests
    view = await call(request, parts.get_change_request, project, request_id)
    cr = view.request
    preview = None
    if cr.state not in CLOSED_STATES:
        preview = await _previewed(request, project, cr.id)
    who = viewer(request).actor
    mine = (
        who.user_id == cr.created_by_id
        if who.user_id is not None and cr.created_by_id is not None
        else who.actor == cr.created_by
    )
    editable = cr.state in EDITABLE_STATES and (mine or typed is not None)
    reviewers = {}
    if editable or cr.reviewers:  # the names of those asked, and whom one may ask
        found = await call(request, parts.available_reviewers, project, cr.environment)
        reviewers = {user.id: user.display_name for user in found}
    return render(
        request,
        "change_request.html",
        {
            "view": view,
            "cr": cr,
            "preview": preview,
            "mine": mine,
            "editable": editable,
            "reviewer_choices": reviewers,
            "typed": typed or TypedEdits(),
            # the schedule form's value: the time set, in UTC to the minute
            "scheduled_minute": (
                cr.scheduled_at.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M")
                if cr.scheduled_at is not None and cr.state is ChangeRequestState.SCHEDULED
                else ""
            ),
            "error": error.message if error else None,
            "errors": field_errors(error) if error else {},
        },
        status=form_status(error),
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
    project, request_id = request.match_info["project_id"], request_id_of(request)
    posted = form(request)
    state = posted.get("state", "")
    typed_at = posted.get("scheduledAt", "")
    try:
        done = await moved(
            request,
            viewer(request).actor,
            project,
            request_id,
            state,
            comment=posted.get("comment") or None,
            scheduled_at=_in_utc(typed_at) if state == "Scheduled" else None,
        )
    except FlagcoreError as error:
        if state != "Scheduled":
            raise
        typed = TypedEdits(scheduled_at=typed_at)  # the schedule form as typed
        return await request_page(request, project, request_id, typed=typed, error=error)
    url = change_request_url(project, request_id)
    return redirect(with_flash(request, url, "change-request-moved", done.state.value))


_LOCAL_MINUTE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?")


def _in_utc(typed: str) -> str:
    """The schedule form's time, which its label says is UTC: a browser's
    ``datetime-local`` value (``2026-11-26T09:00``) gets its ``Z``; anything else goes
    to the API's reader as typed (an offset typed is kept, the rest refused)."""
    if _LOCAL_MINUTE.fullmatch(typed):
        return typed + ("Z" if typed.count(":") == 2 else ":00Z")
    return typed


@routes.post(ONE + "/comments")
@page()
async def comment(request: web.Request) -> web.Response:
    project, request_id = request.match_info["project_id"], request_id_of(request)
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
