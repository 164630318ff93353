"""Segments: the list with usage counts, the constraint editor, and refused deletions."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from flagcore import CONSTRAINT_OPERATORS, LIST_OPERATORS
from flagcore.change_requests import ChangeAction
from flagcore.errors import Conflict, ErrorDetail, FlagcoreError, NotFound
from flagcore.model import Constraint
from flagcore.wire import SegmentIdPayload, SegmentPayload
from flagcore_http.calls import call
from flagcore_http.ui.drafting import (
    drafted,
    on_the_form,
    segment_draft_target,
    segment_draft_targets,
)
from flagcore_http.ui.flash import with_flash
from flagcore_http.ui.forms import (
    Row,
    constraint_rows,
    constraints_from,
    optional_text,
    rows_of_constraints,
)
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
from flagcore_http.ui.views.context_fields import constraint_vocabulary

__all__ = ["routes", "segment_id"]

routes = web.RouteTableDef()


def segment_id(request: web.Request) -> int:
    raw = request.match_info["id"]
    if not raw.isdigit() or len(raw) > 12:
        raise NotFound("There is no such segment.")
    return int(raw)


async def _list_page(
    request: web.Request,
    error: FlagcoreError | None = None,
    status: int = 200,
    drafting: tuple[str, str] | None = None,
) -> web.Response:
    segments = await call(request, svc(request).segments.list_segment_details)
    # Only a segment in use can be held back by change requests: its deletion is drafted.
    in_use = [d.definition.segment.id for d in segments if d.used_in_features]
    return render(
        request,
        "segments.html",
        {
            "segments": segments,
            "draft_targets": await segment_draft_targets(request, in_use),
            "error": error.message if error else None,
            "details": error.details if error else (),
            "drafting": drafting,  # the refused deletion was to be drafted there
        },
        status=status,
    )


@routes.get("/ui/segments")
@page()
async def list_segments(request: web.Request) -> web.Response:
    return await _list_page(request)


async def _editor(
    request: web.Request,
    values: dict[str, str],
    rows: list[Row],
    *,
    segment: int | None,
    extra: int = 1,
    error: FlagcoreError | None = None,
) -> web.Response:
    projects = await call(request, svc(request).projects.list_projects)
    target = None if segment is None else await segment_draft_target(request, segment)
    return render(
        request,
        "segment.html",
        {
            "draft_target": target,  # change requests hold the segment back (issue 30)
            "values": values,
            "rows": rows,
            "extra": extra,
            "segment_id": segment,
            "projects": projects,
            "operators": tuple(CONSTRAINT_OPERATORS),
            "list_operators": LIST_OPERATORS,
            "error": error.message if error else None,
            "errors": field_errors(error) if error else {},
            **await constraint_vocabulary(request),
        },
        status=form_status(error),
    )


@routes.get("/ui/segments/new")
@page()
async def new_segment(request: web.Request) -> web.Response:
    return await _editor(request, {}, [], segment=None)


@routes.get("/ui/segments/{id}")
@page()
async def edit_segment(request: web.Request) -> web.Response:
    segment = await call(request, svc(request).segments.get_segment, segment_id(request))
    values = {
        "name": segment.name,
        "description": segment.description or "",
        "project": segment.project or "",
    }
    return await _editor(
        request, values, rows_of_constraints(segment.constraints), segment=segment.id
    )


async def _save(request: web.Request, segment: int | None) -> web.Response:
    fields = form(request)
    values = {k: fields.get(k, "") for k in ("name", "description", "project")}
    rows = constraint_rows(fields)
    if fields.get("_more"):
        return await _editor(request, values, rows, segment=segment, extra=2)
    try:
        constraints = constraints_from(rows)
        common: dict[str, Any] = {
            "description": optional_text(fields, "description"),
            "project": optional_text(fields, "project"),
            "actor": viewer(request).actor,
        }
        if segment is not None and fields.get("_draft"):
            return await _drafted(request, segment, values["name"], constraints, common)
        if segment is None:
            await call(
                request, svc(request).segments.create_segment, values["name"], constraints, **common
            )
        else:
            await call(
                request,
                svc(request).segments.update_segment,
                segment,
                values["name"],
                constraints,
                **common,
            )
    except FlagcoreError as error:
        return await _editor(request, values, rows, segment=segment, error=error)
    return redirect(with_flash(request, "/ui/segments", "segment-saved", values["name"]))


async def _drafted(
    request: web.Request,
    segment: int,
    name: str,
    constraints: list[Constraint],
    common: dict[str, Any],
) -> web.Response:
    """The edit as an ``updateSegment`` change in the person's draft where change
    requests hold the segment back (as Unleash's segment form does)."""
    target = await segment_draft_target(request, segment)
    if target is None:
        raise Conflict(
            "no change requests hold this segment back: save it directly",
            [ErrorDetail("save directly", "$.name")],
        )
    payload = SegmentPayload(
        segment, name, tuple(constraints), common["description"], common["project"]
    )
    try:
        return await drafted(request, *target, None, ChangeAction.UPDATE_SEGMENT, payload)
    except FlagcoreError as error:
        raise on_the_form(error, [("$.payload", "$")]) from None


@routes.post("/ui/segments/new")
@page()
async def create_segment(request: web.Request) -> web.Response:
    return await _save(request, None)


@routes.post("/ui/segments/{id}")
@page()
async def update_segment(request: web.Request) -> web.Response:
    return await _save(request, segment_id(request))


@routes.post("/ui/segments/{id}/delete")
@page()
async def delete_segment(request: web.Request) -> web.Response:
    """Deleted, or, where change requests hold the segment back, a ``deleteSegment``
    change added to the person's draft there (as Unleash's segment list does)."""
    deleted = await call(request, svc(request).segments.get_segment, segment_id(request))
    target = await segment_draft_target(request, deleted.id)
    try:
        if target is not None:
            payload = SegmentIdPayload(deleted.id)
            return await drafted(request, *target, None, ChangeAction.DELETE_SEGMENT, payload)
        await call(
            request,
            svc(request).segments.delete_segment,
            segment_id(request),
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        in_use = target if isinstance(error, Conflict) else None
        return await _list_page(request, error, form_status(error, 409), in_use)
    return redirect(with_flash(request, "/ui/segments", "segment-deleted", deleted.name))
