"""The flag page's release plan forms (issue 32): a plan made from a template in an
environment, a milestone started, a safeguard's pause lifted, the plan removed. Each
posts to the same service call as the admin API's route; a refusal answers with the flag
page, the form as chosen and the reason."""

from __future__ import annotations

from aiohttp import web

from flagcore.errors import FlagcoreError
from flagcore_http.calls import call
from flagcore_http.ui.pages import form, form_status, page, redirect, svc, viewer
from flagcore_http.ui.views.flag import flag_page, flag_url
from flagcore_http.ui.views.release_plan_block import TYPED_TEMPLATE

__all__ = ["routes"]

routes = web.RouteTableDef()

PLANS = "/ui/flags/{name}/environments/{environment}/release-plans"
PLAN = PLANS + "/{plan}"


async def _where(request: web.Request) -> tuple[str, str, str]:
    name, environment = request.match_info["name"], request.match_info["environment"]
    project = (await call(request, svc(request).flags.get_flag, None, name)).flag.project
    return project, name, environment


@routes.post(PLANS)
@page()
async def add_release_plan(request: web.Request) -> web.Response:
    project, name, environment = await _where(request)
    template = form(request).get("template", "")
    try:
        await call(
            request,
            svc(request).release_plans.add_release_plan,
            project,
            name,
            environment,
            template,
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        request[TYPED_TEMPLATE] = (environment, template)
        return await flag_page(request, name, error=error, status=form_status(error))
    return redirect(flag_url(name))


@routes.post(PLAN + "/milestones/{milestone}/start")
@page()
async def start_milestone(request: web.Request) -> web.Response:
    project, name, environment = await _where(request)
    try:
        await call(
            request,
            svc(request).release_plans.start_release_plan_milestone,
            project,
            name,
            environment,
            request.match_info["plan"],
            request.match_info["milestone"],
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await flag_page(request, name, error=error, status=form_status(error))
    return redirect(flag_url(name))


@routes.post(PLAN + "/resume")
@page()
async def resume(request: web.Request) -> web.Response:
    project, name, environment = await _where(request)
    try:
        await call(
            request,
            svc(request).release_plans.resume_milestone_progressions,
            project,
            name,
            environment,
            request.match_info["plan"],
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await flag_page(request, name, error=error, status=form_status(error))
    return redirect(flag_url(name))


@routes.post(PLAN + "/remove")
@page()
async def remove(request: web.Request) -> web.Response:
    project, name, environment = await _where(request)
    await call(
        request,
        svc(request).release_plans.remove_release_plan,
        project,
        name,
        environment,
        request.match_info["plan"],
        actor=viewer(request).actor,
    )
    return redirect(flag_url(name))
