"""The flag page's release plan forms (issue 32): a plan made from a template in an
environment, a milestone started, a milestone's progression set or removed, the plan's
safeguard set or removed, a safeguard's pause lifted, the plan removed. Each posts to the
same service call as the admin API's route; a refusal answers with the flag page, the
form as typed and the reason."""

from __future__ import annotations

import re

from aiohttp import web

from flagcore.errors import FlagcoreError
from flagcore.service import checked_safeguard
from flagcore_http.calls import call
from flagcore_http.ui.pages import form, form_status, page, redirect, svc, viewer
from flagcore_http.ui.views.flag import flag_page, flag_url
from flagcore_http.ui.views.release_plan_block import (
    TYPED_PROGRESSION,
    TYPED_SAFEGUARD,
    TYPED_TEMPLATE,
)

__all__ = ["routes"]

routes = web.RouteTableDef()

PLANS = "/ui/flags/{name}/environments/{environment}/release-plans"
PLAN = PLANS + "/{plan}"
PROGRESSION = PLAN + "/milestones/{milestone}/progression"
SAFEGUARD_FIELDS = ("metric", "ratioOf", "aggregation", "operator", "threshold", "window", "action")
_WHOLE = re.compile(r"[0-9]{1,12}")
_DECIMAL = re.compile(r"-?[0-9]{1,15}(\.[0-9]{1,15})?([eE][-+]?[0-9]{1,3})?")


def _whole(text: str) -> object:
    """A whole number as typed, or the text itself for the service to refuse by name."""
    return int(text.strip()) if _WHOLE.fullmatch(text.strip()) else text


def _decimal(text: str) -> object:
    """A decimal number as typed (no ``inf``, ``nan`` or ``1_000``), or the text."""
    return float(text.strip()) if _DECIMAL.fullmatch(text.strip()) else text


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


@routes.post(PROGRESSION)
@page()
async def change_progression(request: web.Request) -> web.Response:
    """After the milestone has been active the minutes typed, the next one starts."""
    project, name, environment = await _where(request)
    milestone = request.match_info["milestone"]
    minutes = form(request).get("minutes", "")
    plans = await call(
        request, svc(request).release_plans.release_plans_of, project, name, environment
    )
    plan = next((p for p in plans if p.id == request.match_info["plan"]), None)
    following = plan.after(milestone) if plan and plan.milestone(milestone) else None
    try:
        await call(
            request,
            svc(request).release_plans.change_milestone_progression,
            project,
            name,
            environment,
            milestone,
            following.id if following else "",
            _whole(minutes),
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        request[TYPED_PROGRESSION] = (environment, milestone, minutes)
        return await flag_page(request, name, error=error, status=form_status(error))
    return redirect(flag_url(name))


@routes.post(PROGRESSION + "/delete")
@page()
async def delete_progression(request: web.Request) -> web.Response:
    project, name, environment = await _where(request)
    try:
        await call(
            request,
            svc(request).release_plans.delete_milestone_progression,
            project,
            name,
            environment,
            request.match_info["milestone"],
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await flag_page(request, name, error=error, status=form_status(error))
    return redirect(flag_url(name))


@routes.post(PLAN + "/safeguard")
@page()
async def put_safeguard(request: web.Request) -> web.Response:
    """The plan's safeguard, made or replaced; the service's rules decide what is valid
    (the same as the API's body), the form only turns typed numbers into numbers."""
    project, name, environment = await _where(request)
    fields = form(request)
    typed = {key: fields.get(key, "") for key in SAFEGUARD_FIELDS}
    try:
        safeguard = checked_safeguard(
            typed["metric"],
            typed["aggregation"],
            typed["operator"],
            _decimal(typed["threshold"]),
            _whole(typed["window"]),
            action=typed["action"],
            ratio_of=typed["ratioOf"] or None,
        )
        await call(
            request,
            svc(request).release_plans.put_release_plan_safeguard,
            project,
            name,
            environment,
            request.match_info["plan"],
            safeguard,
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        request[TYPED_SAFEGUARD] = (environment, typed)
        return await flag_page(request, name, error=error, status=form_status(error))
    return redirect(flag_url(name))


@routes.post(PLAN + "/safeguards/{safeguard}/delete")
@page()
async def delete_safeguard(request: web.Request) -> web.Response:
    project, name, environment = await _where(request)
    try:
        await call(
            request,
            svc(request).release_plans.delete_release_plan_safeguard,
            project,
            name,
            environment,
            request.match_info["plan"],
            request.match_info["safeguard"],
            actor=viewer(request).actor,
        )
    except FlagcoreError as error:
        return await flag_page(request, name, error=error, status=form_status(error))
    return redirect(flag_url(name))
