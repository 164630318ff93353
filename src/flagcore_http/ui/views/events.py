"""The event log: who changed what and when, filtered by flag and project."""

from __future__ import annotations

import urllib.parse

from aiohttp import web

from flagcore.entities import Event
from flagcore_http.calls import call
from flagcore_http.ui.event_diff import MAX_CHANGES, changes
from flagcore_http.ui.pages import page, render, svc

__all__ = ["routes"]

routes = web.RouteTableDef()

PER_PAGE = 50
# A project filter reads the log in batches (the store filters by flag only); it stops
# after this many events so one page never scans the whole log.
_SCAN_LIMIT = 5_000
_BATCH = 500


async def _events(
    request: web.Request, flag: str | None, project: str | None, before: int | None
) -> tuple[list[Event], bool]:
    """Up to a page of matching events, newest first, and whether there may be more."""
    found: list[Event] = []
    scanned = 0
    while len(found) < PER_PAGE and scanned < _SCAN_LIMIT:
        batch = await call(
            request,
            svc(request).events.list_events,
            limit=_BATCH if project else PER_PAGE,
            before_id=before,
            feature_name=flag,
        )
        if not batch:
            return found, False
        scanned += len(batch)
        found.extend(e for e in batch if project is None or e.project == project)
        before = batch[-1].id
        if project is None:
            break
    return found[:PER_PAGE], True


@routes.get("/ui/events")
@page()
async def event_log(request: web.Request) -> web.Response:
    query = request.query
    flag = query.get("flag", "")[:255] or None
    project = query.get("project", "")[:255] or None
    raw_before = query.get("before", "")
    before = int(raw_before) if raw_before.isdigit() and len(raw_before) < 19 else None
    events, more = await _events(request, flag, project, before)
    older = None
    if more and events:
        older = "/ui/events?" + urllib.parse.urlencode(
            {"flag": flag or "", "project": project or "", "before": events[-1].id}
        )
    return render(
        request,
        "events.html",
        {
            "events": events,
            "changes": {e.id: changes(e.pre_data, e.data) for e in events},
            "max_changes": MAX_CHANGES,
            "flag": flag or "",
            "project": project or "",
            "older": older,
        },
    )
