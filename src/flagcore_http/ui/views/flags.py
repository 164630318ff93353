"""The flags of a project: search, filters, per-environment switches, and new flags."""

from __future__ import annotations

import urllib.parse

from aiohttp import web

from flagcore import MAX_NAME_LENGTH
from flagcore.entities import Tag
from flagcore.errors import ErrorDetail, FlagcoreError, InvalidInput
from flagcore.model import FlagType
from flagcore.service import DraftChange
from flagcore_http.calls import call
from flagcore_http.ui.flash import with_flash
from flagcore_http.ui.forms import optional_text, tags_from
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
from flagcore_http.ui.views.change_requests import change_request_url
from flagcore_http.ui.views.sign_in import safe_next

__all__ = ["PER_PAGE", "routes"]

routes = web.RouteTableDef()

PER_PAGE = 100
FLAG_TYPES = tuple(t.value for t in FlagType)
# A search longer than any flag name cannot match; it is cut, not refused.
_MAX_SEARCH = 255


def _page_number(raw: str | None) -> int:
    return int(raw) if raw and raw.isdigit() and len(raw) < 7 else 1


@routes.get("/ui/flags")
@page()
async def list_flags(request: web.Request) -> web.Response:
    query = request.query
    project = (query.get("project") or "default")[:MAX_NAME_LENGTH]  # echoed in a 404
    search = query.get("q", "")[:_MAX_SEARCH]
    flag_type = query.get("type") or None
    tag = None
    if query.get("tag"):
        kind, _, value = query["tag"].partition(":")
        tag = Tag(kind, value)
    overview = await call(
        request,
        svc(request).flag_overviews.page,
        project,
        search=search,
        tag=tag,
        flag_type=flag_type if flag_type in FLAG_TYPES else None,
        page=_page_number(query.get("page")),
        per_page=PER_PAGE,
    )
    projects = await call(request, svc(request).projects.list_projects)
    filters = {
        "project": project,
        "q": search,
        "type": flag_type or "",
        "tag": query.get("tag", ""),
    }
    return render(
        request,
        "flags.html",
        {
            "overview": overview,
            "projects": projects,
            "project": project,
            "filters": filters,
            "flag_types": FLAG_TYPES,
            "page_url": lambda number: (
                "/ui/flags?" + urllib.parse.urlencode({**filters, "page": number})
            ),
            "here": request.path_qs,
        },
    )


@routes.post("/ui/flags/{name}/environments/{environment}/switch")
@page()
async def switch(request: web.Request) -> web.Response:
    fields = form(request)
    wanted = fields.get("enabled")
    if wanted not in ("true", "false"):
        raise InvalidInput(
            "enabled must be true or false", [ErrorDetail("true or false", "$.enabled")]
        )
    name, environment = request.match_info["name"], request.match_info["environment"]
    details = await call(request, svc(request).flags.get_flag, None, name)
    project = details.flag.project
    config = await call(request, svc(request).change_requests.change_request_config, project)
    if any(row.enabled for row in config if row.environment == environment):
        # Change requests are on there: the switch drafts the change (as Unleash's UI does).
        draft = await call(
            request,
            svc(request).change_requests.add_changes,
            project,
            environment,
            [DraftChange(name, "updateEnabled", {"enabled": wanted == "true"})],
            actor=viewer(request).actor,
        )
        url = change_request_url(project, draft.id)
        return redirect(with_flash(request, url, "change-drafted", str(draft.id)))
    await call(
        request,
        svc(request).environments.set_environment_enabled,
        details.flag.project,
        name,
        environment,
        wanted == "true",
        actor=viewer(request).actor,
    )
    return redirect(safe_next(fields.get("back")))


@routes.get("/ui/flags/new")
@page()
async def new_flag_form(request: web.Request) -> web.Response:
    return await _new_flag_page(request, {"project": request.query.get("project", "default")})


async def _new_flag_page(
    request: web.Request,
    values: dict[str, str],
    error: FlagcoreError | None = None,
) -> web.Response:
    projects = await call(request, svc(request).projects.list_projects)
    return render(
        request,
        "flag_new.html",
        {
            "values": values,
            "projects": projects,
            "flag_types": FLAG_TYPES,
            "errors": field_errors(error) if error else {},
            "error": error.message if error else None,
        },
        status=form_status(error),
    )


@routes.post("/ui/flags/new")
@page()
async def create_flag(request: web.Request) -> web.Response:
    fields = form(request)
    values = {k: fields.get(k, "") for k in ("project", "name", "type", "description", "tags")}
    try:
        created = await call(
            request,
            svc(request).flags.create_flag,
            values["project"],
            values["name"],
            type=values["type"],  # a select: blank only from a hand-made form, refused
            description=optional_text(fields, "description"),
            tags=tags_from(values["tags"]),
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await _new_flag_page(request, values, error)
    url = f"/ui/flags/{urllib.parse.quote(created.name, safe='')}"
    return redirect(with_flash(request, url, "flag-created", created.name))
