"""The flag page's release plan forms (issue 32): a plan made from a template in an
environment, a milestone started, a milestone's progression set or removed, the plan's
safeguard set or removed, a safeguard's pause lifted, the plan removed. Each posts to the
same service call as the admin API's route; where change requests are on in the
environment, the change goes to the person's draft instead, on Unleash's change names
(issue 30). A refusal answers with the flag page, the form as typed and the reason."""

from __future__ import annotations

import re
from typing import Any

from aiohttp import web

from flagcore.change_requests import ChangeAction
from flagcore.errors import FlagcoreError
from flagcore.release_plans import Safeguard
from flagcore.service import check_transition, checked_safeguard
from flagcore.wire import (
    MilestoneIdPayload,
    PlanIdPayload,
    ProgressionPayload,
    SafeguardActionPayload,
    SafeguardChangePayload,
    SafeguardIdPayload,
    SafeguardMetricPayload,
    SafeguardPayload,
    SafeguardTriggerPayload,
    SourceMilestonePayload,
    TemplateIdPayload,
    TransitionPayload,
)
from flagcore_http.calls import call
from flagcore_http.ui.drafting import drafted, drafting_in, on_the_form
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
_ON_THE_FORM = (("$.payload.safeguard", "$"), ("$.payload", "$"))
"""A drafted change's paths (``$.payload.transitionCondition...``) as the form's fields."""


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


async def _changed(
    request: web.Request,
    where: tuple[str, str, str],
    operation: str,
    arguments: tuple[Any, ...],
    action: ChangeAction,
    payload: Any,
) -> web.Response:
    """``operation`` of the plan service made directly, or, where change requests are on,
    ``action`` with ``payload`` added to the viewer's draft (the browser goes there)."""
    project, name, environment = where
    config = await call(request, svc(request).change_requests.change_request_config, project)
    if drafting_in(config, environment):
        try:
            return await drafted(request, project, environment, name, action, payload)
        except FlagcoreError as error:
            raise on_the_form(error, _ON_THE_FORM) from error
    method = getattr(svc(request).release_plans, operation)
    await call(request, method, *where, *arguments, actor=viewer(request).actor)
    return redirect(flag_url(name))


async def _refused(request: web.Request, name: str, error: FlagcoreError) -> web.Response:
    return await flag_page(request, name, error=error, status=form_status(error))


async def _button(
    request: web.Request,
    operation: str,
    arguments: tuple[str, ...],
    action: ChangeAction,
    payload: Any,
) -> web.Response:
    """A form of one button (nothing typed): made or drafted, or the page with why not."""
    where = await _where(request)
    try:
        return await _changed(request, where, operation, arguments, action, payload)
    except FlagcoreError as error:
        return await _refused(request, where[1], error)


@routes.post(PLANS)
@page()
async def add_release_plan(request: web.Request) -> web.Response:
    where = await _where(request)
    template = form(request).get("template", "")
    try:
        return await _changed(
            request,
            where,
            "add_release_plan",
            (template,),
            ChangeAction.ADD_RELEASE_PLAN,
            TemplateIdPayload(template),
        )
    except FlagcoreError as error:
        request[TYPED_TEMPLATE] = (where[2], template)
        return await _refused(request, where[1], error)


@routes.post(PLAN + "/milestones/{milestone}/start")
@page()
async def start_milestone(request: web.Request) -> web.Response:
    plan, milestone = request.match_info["plan"], request.match_info["milestone"]
    return await _button(
        request,
        "start_release_plan_milestone",
        (plan, milestone),
        ChangeAction.START_MILESTONE,
        MilestoneIdPayload(milestone),
    )


@routes.post(PLAN + "/resume")
@page()
async def resume(request: web.Request) -> web.Response:
    plan = request.match_info["plan"]
    return await _button(
        request,
        "resume_milestone_progressions",
        (plan,),
        ChangeAction.RESUME_MILESTONE_PROGRESSION,
        PlanIdPayload(plan),
    )


@routes.post(PLAN + "/remove")
@page()
async def remove(request: web.Request) -> web.Response:
    plan = request.match_info["plan"]
    return await _button(
        request,
        "remove_release_plan",
        (plan,),
        ChangeAction.DELETE_RELEASE_PLAN,
        PlanIdPayload(plan),
    )


@routes.post(PROGRESSION)
@page()
async def change_progression(request: web.Request) -> web.Response:
    """After the milestone has been active the minutes typed, the next one starts."""
    where = await _where(request)
    project, name, environment = where
    milestone = request.match_info["milestone"]
    minutes = form(request).get("minutes", "")
    plans = await call(
        request, svc(request).release_plans.release_plans_of, project, name, environment
    )
    plan = next((p for p in plans if p.id == request.match_info["plan"]), None)
    following = plan.after(milestone) if plan and plan.milestone(milestone) else None
    target = following.id if following else ""
    try:
        whole = _whole(minutes)
        payload = ProgressionPayload(
            milestone,
            target,
            TransitionPayload(check_transition(whole, "$.transitionCondition.intervalMinutes")),
        )
        return await _changed(
            request,
            where,
            "change_milestone_progression",
            (milestone, target, whole),
            ChangeAction.CHANGE_MILESTONE_PROGRESSION,
            payload,
        )
    except FlagcoreError as error:
        request[TYPED_PROGRESSION] = (environment, milestone, minutes)
        return await _refused(request, name, error)


@routes.post(PROGRESSION + "/delete")
@page()
async def delete_progression(request: web.Request) -> web.Response:
    milestone = request.match_info["milestone"]
    return await _button(
        request,
        "delete_milestone_progression",
        (milestone,),
        ChangeAction.DELETE_MILESTONE_PROGRESSION,
        SourceMilestonePayload(milestone),
    )


def _payload_of(safeguard: Safeguard) -> SafeguardPayload:
    """A checked safeguard as a change's payload (Unleash's keys, flagcore's window)."""
    return SafeguardPayload(
        SafeguardMetricPayload(
            safeguard.metric_name,
            safeguard.aggregation_mode,
            window_minutes=safeguard.window_minutes,
            ratio_of=safeguard.ratio_of,
        ),
        SafeguardTriggerPayload(safeguard.operator.value, safeguard.threshold),
        SafeguardActionPayload(safeguard.action.value),
    )


@routes.post(PLAN + "/safeguard")
@page()
async def put_safeguard(request: web.Request) -> web.Response:
    """The plan's safeguard, made or replaced; the service's rules decide what is valid
    (the same as the API's body), the form only turns typed numbers into numbers."""
    where = await _where(request)
    plan = request.match_info["plan"]
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
        return await _changed(
            request,
            where,
            "put_release_plan_safeguard",
            (plan, safeguard),
            ChangeAction.CHANGE_SAFEGUARD,
            SafeguardChangePayload(plan, _payload_of(safeguard)),
        )
    except FlagcoreError as error:
        request[TYPED_SAFEGUARD] = (where[2], typed)
        return await _refused(request, where[1], error)


@routes.post(PLAN + "/safeguards/{safeguard}/delete")
@page()
async def delete_safeguard(request: web.Request) -> web.Response:
    plan, safeguard = request.match_info["plan"], request.match_info["safeguard"]
    return await _button(
        request,
        "delete_release_plan_safeguard",
        (plan, safeguard),
        ChangeAction.DELETE_SAFEGUARD,
        SafeguardIdPayload(plan, safeguard),
    )
