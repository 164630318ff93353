"""Every project's flags in one list (Unleash's search): name or description, project,
type, tag and stale filters, 100 a page, each flag's project and switches."""

from __future__ import annotations

import urllib.parse

from aiohttp import web

from flagcore.entities import Tag
from flagcore.model import FlagType
from flagcore.service import FlagQuery
from flagcore_http.calls import call
from flagcore_http.ui.pages import page, render, svc

__all__ = ["routes"]

routes = web.RouteTableDef()

PER_PAGE = 100
FLAG_TYPES = tuple(t.value for t in FlagType)
STATES = {"stale": True, "active": False}
# A search longer than any flag name or description worth typing is cut, not refused.
_MAX_SEARCH = 255


def _page_number(raw: str | None) -> int:
    return int(raw) if raw and raw.isdigit() and len(raw) < 7 else 1


@routes.get("/ui/search")
@page()
async def all_flags(request: web.Request) -> web.Response:
    query = request.query
    filters = {
        "q": query.get("q", "")[:_MAX_SEARCH],
        "project": query.get("project", "")[:255],
        "type": query.get("type", "") if query.get("type") in FLAG_TYPES else "",
        "tag": query.get("tag", "")[:255],
        "state": query.get("state", "") if query.get("state") in STATES else "",
    }
    kind, colon, value = filters["tag"].partition(":")
    wanted = FlagQuery(
        text=filters["q"],
        projects=(filters["project"],) if filters["project"] else (),
        types=(filters["type"],) if filters["type"] else (),
        tags=(Tag(kind, value),) if colon else (),
        stale=STATES.get(filters["state"]),
        sort_by="name",
    )
    number = _page_number(query.get("page"))
    search = svc(request).flag_overviews.search
    found = await call(request, search, wanted, offset=(number - 1) * PER_PAGE, limit=PER_PAGE)
    pages = max(1, -(-found.matching // PER_PAGE))
    if number > pages:  # past the end shows the last page, as the project list does
        number = pages
        offset = (number - 1) * PER_PAGE
        found = await call(request, search, wanted, offset=offset, limit=PER_PAGE)
    projects = await call(request, svc(request).projects.list_projects)
    return render(
        request,
        "all_flags.html",
        {
            "found": found,
            "page": number,
            "pages": pages,
            "projects": projects,
            "filters": filters,
            "flag_types": FLAG_TYPES,
            "page_url": lambda n: "/ui/search?" + urllib.parse.urlencode({**filters, "page": n}),
            "here": request.path_qs,
        },
    )
