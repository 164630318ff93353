"""The author's forms on a change request's page (issue 30): its title, the people asked
to review it, one change's payload edited or the change taken out, and a whole draft
discarded. Each calls the service method the API's route calls; a refused form comes
back as typed on the request's page."""

from __future__ import annotations

import json
import urllib.parse

from aiohttp import web

from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput
from flagcore.service import DraftChange
from flagcore_http.calls import call
from flagcore_http.ui.flash import with_flash
from flagcore_http.ui.pages import form, page, redirect, svc, viewer
from flagcore_http.ui.views.change_requests import (
    ONE,
    TypedEdits,
    change_request_url,
    request_id_of,
    request_page,
)

__all__ = ["routes"]

routes = web.RouteTableDef()

CHANGE = ONE + "/changes/{change_id}"


def _where(request: web.Request) -> tuple[str, int]:
    return request.match_info["project_id"], request_id_of(request)


def _change_id(request: web.Request) -> int:
    raw = request.match_info["change_id"]
    if not raw.isascii() or not raw.isdigit() or len(raw) > 18:
        raise InvalidInput("no such change", [ErrorDetail("not a number", "$.changeId")])
    return int(raw)


@routes.post(ONE + "/title")
@page()
async def set_title(request: web.Request) -> web.Response:
    project, request_id = _where(request)
    title = form(request).get("title", "")
    try:
        await call(
            request,
            svc(request).change_requests.set_change_request_title,
            project,
            request_id,
            title,
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        typed = TypedEdits(title=title)
        return await request_page(request, project, request_id, typed=typed, error=error)
    url = change_request_url(project, request_id)
    return redirect(with_flash(request, url, "change-request-title-saved", str(request_id)))


@routes.post(ONE + "/reviewers")
@page()
async def set_reviewers(request: web.Request) -> web.Response:
    """The whole list of people asked to review (the API's ``PUT .../approvers``): the
    boxes ticked, none for nobody."""
    project, request_id = _where(request)
    posted = tuple(form(request).getall("reviewers", []))
    try:
        await call(
            request,
            svc(request).change_requests.set_change_request_reviewers,
            project,
            request_id,
            _user_ids(posted),
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        typed = TypedEdits(reviewers=posted)
        return await request_page(request, project, request_id, typed=typed, error=error)
    url = change_request_url(project, request_id)
    return redirect(with_flash(request, url, "change-request-reviewers-saved", str(request_id)))


def _user_ids(posted: tuple[str, ...]) -> list[int]:
    ids = []
    for index, raw in enumerate(posted):
        if not raw.isascii() or not raw.isdigit() or len(raw) > 18:
            raise InvalidInput(
                f"{raw!r} is not a user id", [ErrorDetail("not a user id", f"$.reviewers[{index}]")]
            )
        ids.append(int(raw))
    return ids


@routes.post(CHANGE)
@page()
async def edit_change(request: web.Request) -> web.Response:
    """One change's payload replaced by the JSON typed (its flag and action stay): checked
    as when it was drafted, approvals given so far withdrawn."""
    project, request_id = _where(request)
    change_id = _change_id(request)
    text = form(request).get("payload", "").replace("\r\n", "\n")
    try:
        view = await call(
            request, svc(request).change_requests.get_change_request, project, request_id
        )
        found = next((c for c in view.request.changes if c.id == change_id), None)
        if found is None:
            raise InvalidInput(
                f"change request {request_id} has no change {change_id}",
                [ErrorDetail("no such change", "$.changeId")],
            )
        await call(
            request,
            svc(request).change_requests.edit_change,
            project,
            request_id,
            change_id,
            DraftChange(found.feature, found.action.value, _payload(text)),
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        typed = TypedEdits(change=(change_id, text))
        return await request_page(request, project, request_id, typed=typed, error=error)
    url = change_request_url(project, request_id)
    return redirect(with_flash(request, url, "change-edited", str(change_id)))


def _payload(text: str) -> object:
    """The typed JSON; empty is no payload (``archiveFeature``, ``deleteDependency``)."""
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except ValueError as error:
        raise InvalidInput(
            "The payload is not JSON.", [ErrorDetail(f"not JSON: {error}", "$.payload")]
        ) from None


@routes.post(CHANGE + "/discard")
@page()
async def discard_change(request: web.Request) -> web.Response:
    """A change taken out; a draft left without changes is gone, so the browser goes
    back to the project's list."""
    project, request_id = _where(request)
    change_id = _change_id(request)
    left = await call(
        request,
        svc(request).change_requests.discard_change,
        project,
        request_id,
        change_id,
        actor=viewer(request).actor,
    )
    if left is None:
        return redirect(with_flash(request, _list_url(project), "draft-discarded", str(request_id)))
    url = change_request_url(project, request_id)
    return redirect(with_flash(request, url, "change-discarded", str(change_id)))


@routes.post(ONE + "/discard")
@page()
async def discard_draft(request: web.Request) -> web.Response:
    project, request_id = _where(request)
    await call(
        request,
        svc(request).change_requests.discard_draft,
        project,
        request_id,
        actor=viewer(request).actor,
    )
    return redirect(with_flash(request, _list_url(project), "draft-discarded", str(request_id)))


def _list_url(project: str) -> str:
    return "/ui/change-requests?" + urllib.parse.urlencode({"project": project})
