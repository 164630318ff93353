"""One flag: its environments and strategies, variants, tags, stale marker, lifecycle,
archiving, code references."""

from __future__ import annotations

import datetime as dt
import urllib.parse
from collections.abc import Mapping

from aiohttp import web

from flagcore.change_requests import ChangeAction
from flagcore.entities import FlagMetrics, Tag
from flagcore.errors import ErrorDetail, FlagcoreError, Forbidden, NotFound
from flagcore.service import is_potentially_stale
from flagcore.wire import VariantsPayload
from flagcore_http.calls import call
from flagcore_http.keys import CONFIG
from flagcore_http.ui.drafting import (
    drafted,
    drafting_in,
    flag_draft_environment,
    on_the_form,
)
from flagcore_http.ui.flash import with_flash
from flagcore_http.ui.forms import (
    PAYLOAD_TYPES,
    Row,
    rows_of_variants,
    variant_rows,
    variants_from,
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
from flagcore_http.ui.usage_chart import UsageView, chosen_range, usage_view
from flagcore_http.ui.views.context_fields import constraint_vocabulary
from flagcore_http.ui.views.release_plan_block import release_view
from flagcore_http.usage_buffer import flush_usage

__all__ = ["flag_page", "flag_url", "routes"]

routes = web.RouteTableDef()

FLAG = "/ui/flags/{name}"

# Notices a redirect may ask the flag page to show, by code: the page never echoes text
# from the address bar.
NOTICES = {
    "disabled": "That was the last active strategy in {environment}: the flag is now off there.",
}


MAX_PARENT_CHOICES = 300


def flag_url(name: str, **query: str) -> str:
    url = f"/ui/flags/{urllib.parse.quote(name, safe='')}"
    return url + ("?" + urllib.parse.urlencode(query) if query else "")


@routes.get(FLAG)
@page()
async def show_flag(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    return await flag_page(request, name)


async def flag_page(
    request: web.Request,
    name: str,
    *,
    typed_tag: Tag | None = None,
    typed_dependency: Mapping[str, str] | None = None,
    typed_copy: Mapping[str, str] | None = None,
    typed_completion: tuple[str, str] | None = None,
    error: FlagcoreError | None = None,
    status: int = 200,
) -> web.Response:
    """The flag's page; after a refused form, that form as typed (``typed_tag``,
    ``typed_dependency``, ``typed_copy``: the one the error belongs to) with the error."""
    service = svc(request)
    details = await call(request, service.flags.get_flag, None, name)
    segments = {s.id: s for s in await call(request, service.segments.list_segments)}
    tag_types = await call(request, service.tags.list_tag_types)
    parent_choices = None
    if viewer(request).may("set_dependencies", project=details.flag.project):
        # A select for a project of a few hundred flags; past that, the name is typed (a
        # select of 5,000 flags made the page 140 kB and 70 ms slower).
        parent_choices = await call(
            request,
            service.dependencies.parent_candidates,
            details.flag.project,
            name,
            limit=MAX_PARENT_CHOICES,
        )
    environments = await call(request, service.environments.list_environments)
    await flush_usage(request.app)  # what SDKs posted to this node is shown at once
    metrics = _last_hour(await call(request, service.metrics.flag_metrics, name))
    code_references = await call(request, service.code_references.references_to, name)
    timeline = await call(request, service.lifecycle.lifecycle_timeline, details.flag.project, name)
    usage = await _usage(request, name)  # issue 32: the usage history's charts
    lifetimes = await call(request, service.feature_types.lifetimes)
    potentially_stale = is_potentially_stale(details.flag, lifetimes, dt.datetime.now(dt.UTC))
    scheduled = await call(  # change requests scheduled to change this flag (issue 30)
        request, service.change_requests.scheduled_change_requests, details.flag.project, [name]
    )
    open_requests = await call(  # Unleash's pending/<flag>: those not closed yet
        request,
        service.change_requests.open_change_requests,
        details.flag.project,
        viewer(request).actor,
        feature=name,
    )
    config = await call(
        request, service.change_requests.change_request_config, details.flag.project
    )
    notice = None
    code, environment = request.query.get("notice"), request.query.get("environment", "")
    if code in NOTICES:
        notice = NOTICES[code].format(environment=environment[:100])
    return render(
        request,
        "flag.html",
        {
            "details": details,
            "flag": details.flag,
            "segments": segments,
            "tag_types": tag_types,
            "metrics": metrics,
            "code_references": code_references,
            "lifecycle": timeline,  # each stage with the time spent in it
            "potentially_stale": potentially_stale,
            "lifetime_days": lifetimes.get(details.flag.type),
            "typed_completion": typed_completion,  # the completion form as typed, refused
            "code_sources": len({found.source for found in code_references}),
            "usage": usage,
            "notice": notice,
            "typed_tag": typed_tag,  # the tag form as typed, after a refusal
            "typed_dependency": typed_dependency,
            "typed_copy": typed_copy,  # {"source", "target"}: a refused copy of strategies
            # Parents a dependency may name: the project's other flags (the service
            # checks the rest: one level deep, active); None: typed.
            "parent_choices": parent_choices,
            "environments": environments,
            "error": error.message if error else None,
            "errors": field_errors(error) if error else {},
            "scheduled": scheduled,
            "open_requests": open_requests,
            # where a change to the whole flag (dependencies, archiving) is drafted; None: done
            # directly (issue 30)
            "draft_environment": flag_draft_environment(config),
            # release plans (issue 32): per environment, shown by release_plan.html
            "release": await release_view(request, details.flag, config),
        },
        status=status,
    )


def _last_hour(rows: list[FlagMetrics]) -> list[tuple[str, str, int, int]]:
    """Yes/no counts per application and environment over the hour buckets that overlap
    the last hour (metrics are kept by the hour, so this is the current and the previous
    bucket)."""
    since = (dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)).replace(
        minute=0, second=0, microsecond=0
    )
    totals: dict[tuple[str, str], list[int]] = {}
    for row in rows:
        if row.hour >= since:
            counts = totals.setdefault((row.app_name, row.environment), [0, 0])
            counts[0] += row.yes
            counts[1] += row.no
    return [(app, env, yes, no) for (app, env), (yes, no) in sorted(totals.items())]


async def _usage(request: web.Request, name: str) -> UsageView:
    """The usage history's charts over the range ``?usage=`` names (48 hours unless it
    names another of `RANGES`), and when each application last reported the flag."""
    chosen = chosen_range(request.query.get("usage"))
    history = svc(request).usage_history
    series = await call(
        request,
        history.series,
        name,
        chosen.hours_back,
        hour_buckets_hours=request.app[CONFIG].retention.metrics_hours,
        by_day=chosen.by_day,
    )
    return usage_view(series, await call(request, history.last_seen, name), chosen)


async def _project_of(request: web.Request, name: str) -> str:
    details = await call(request, svc(request).flags.get_flag, None, name)
    return details.flag.project


@routes.post(FLAG + "/stale")
@page()
async def set_stale(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    stale = form(request).get("stale") == "true"
    await call(
        request,
        svc(request).flags.mark_stale,
        await _project_of(request, name),
        name,
        stale,
        actor=viewer(request).actor,
    )
    return redirect(flag_url(name))


@routes.post(FLAG + "/archive")
@page()
async def archive(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    project = await _project_of(request, name)
    config = await call(request, svc(request).change_requests.change_request_config, project)
    environment = flag_draft_environment(config)
    if environment is not None:  # change requests are on in the project: an archiveFeature
        return await drafted(
            request, project, environment, name, ChangeAction.ARCHIVE_FEATURE, None
        )
    await call(
        request, svc(request).archive.archive_flag, project, name, actor=viewer(request).actor
    )
    return redirect(with_flash(request, "/ui/archive", "flag-archived", name))


@routes.post(FLAG + "/complete")
@page()
async def complete(request: web.Request) -> web.Response:
    """Unleash's "mark completed": kept or discarded, and what was kept."""
    name = request.match_info["name"]
    fields = form(request)
    status, value = fields.get("status", ""), fields.get("statusValue", "")
    try:
        await call(
            request,
            svc(request).lifecycle.complete_flag,
            await _project_of(request, name),
            name,
            status,
            value or None,  # an empty box: nothing named as kept
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await flag_page(
            request, name, typed_completion=(status, value), error=error, status=form_status(error)
        )
    return redirect(flag_url(name))


@routes.post(FLAG + "/uncomplete")
@page()
async def uncomplete(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    await call(
        request,
        svc(request).lifecycle.uncomplete_flag,
        await _project_of(request, name),
        name,
        actor=viewer(request).actor,
    )
    return redirect(flag_url(name))


@routes.post(FLAG + "/tags")
@page()
async def add_tag(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    fields = form(request)
    tag = Tag(fields.get("type", ""), fields.get("value", ""))
    try:  # the service checks the value and the type, at $.value and $.type
        await call(request, svc(request).tags.add_flag_tag, name, tag, actor=viewer(request).actor)
    except FlagcoreError as error:
        return await flag_page(request, name, typed_tag=tag, error=error, status=form_status(error))
    return redirect(flag_url(name))


@routes.post(FLAG + "/tags/remove")
@page()
async def remove_tag(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    fields = form(request)
    tag = Tag(fields.get("type", ""), fields.get("value", ""))
    await call(request, svc(request).tags.remove_flag_tag, name, tag, actor=viewer(request).actor)
    return redirect(flag_url(name))


VARIANTS = FLAG + "/environments/{environment}/variants"


@routes.get(VARIANTS)
@page()
async def variants_form(request: web.Request) -> web.Response:
    name, environment = request.match_info["name"], request.match_info["environment"]
    details = await call(request, svc(request).flags.get_flag, None, name)
    state = next((e for e in details.environments if e.environment.name == environment), None)
    if state is None:
        raise NotFound(f'there is no environment "{environment}"')
    rows = rows_of_variants(state.variants)
    return await _variants_page(request, details.flag.project, environment, rows)


async def _variants_page(
    request: web.Request,
    project: str,
    environment: str,
    rows: list[Row],
    *,
    extra: int = 1,
    error: FlagcoreError | None = None,
) -> web.Response:
    config = await call(request, svc(request).change_requests.change_request_config, project)
    vocabulary = await constraint_vocabulary(request)
    return render(
        request,
        "variants.html",
        {
            # a variant's stickiness suggests what the strategy editor does (registry)
            "stickiness_choices": vocabulary["stickiness_choices"],
            "name": request.match_info["name"],
            "project": project,
            "environment": environment,
            "rows": rows,
            "extra": extra,
            "payload_types": PAYLOAD_TYPES,
            "drafting": drafting_in(config, environment),  # "Add to draft" (issue 30)
            "error": error.message if error else None,
            "errors": field_errors(error) if error else {},
        },
        status=form_status(error),
    )


@routes.post(VARIANTS)
@page()
async def save_variants(request: web.Request) -> web.Response:
    name, environment = request.match_info["name"], request.match_info["environment"]
    fields = form(request)
    rows = variant_rows(fields)
    project = await _project_of(request, name)
    if fields.get("_more"):
        return await _variants_page(request, project, environment, rows, extra=2)
    try:
        variants = variants_from(rows)
        if fields.get("_draft"):  # change requests are on there: a patchVariant change
            try:
                payload = VariantsPayload(tuple(variants))
                return await drafted(
                    request, project, environment, name, ChangeAction.PATCH_VARIANT, payload
                )
            except FlagcoreError as error:
                moves = [("$.payload.variants", "$.variants"), ("$.payload", "$.variants")]
                raise on_the_form(error, moves) from None
        try:
            await call(
                request,
                svc(request).variants.set_flag_variants,
                project,
                name,
                environment,
                variants,
                actor=viewer(request).actor,
            )
        except FlagcoreError as error:
            raise _under_variants(error) from None
    except FlagcoreError as error:
        return await _variants_page(request, project, environment, rows, error=error)
    return redirect(with_flash(request, flag_url(name), "variants-saved", environment))


def _under_variants(error: FlagcoreError) -> FlagcoreError:
    """The service names the list as ``$`` (``$[1].weight``); the form's rows are
    ``$.variants[1]``, so each message lands at its row."""
    if isinstance(error, Forbidden):
        return error  # a refusal stays one (403), whatever its details
    details = [
        ErrorDetail(d.message, "$.variants" + d.path[1:])
        if d.path is not None and d.path.startswith("$")
        else d
        for d in error.details
    ]
    return FlagcoreError(error.message, details)
