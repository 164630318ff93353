"""Release templates and plans (issue 32) on the paths Unleash's frontend calls:
``/api/admin/release-plan-templates`` and, on a flag in an environment,
``…/features/<f>/environments/<e>/release-plans``, ``…/progressions`` and
``…/release-plans/<id>/safeguards`` (docs/release-plans.md)."""

from __future__ import annotations

from aiohttp import web

from flagcore.release_plans import Milestone
from flagcore.service import checked_safeguard
from flagcore.wire import (
    ImpactPointAnswer,
    ReleasePlanAnswer,
    ReleasePlanTemplateAnswer,
    read_impact_metrics,
    write_answer,
)
from flagcore_http import shapes
from flagcore_http.answering import answered
from flagcore_http.bodies import query_int, read_body
from flagcore_http.calls import actor, call, service
from flagcore_http.contract import Parameter, documented
from flagcore_http.wire import (
    ImpactMetricsBody,
    MilestoneBody,
    ProgressionBody,
    ReleasePlanTemplateBody,
    SafeguardBody,
    TemplateIdBody,
)

__all__ = ["routes"]

routes = web.RouteTableDef()

TEMPLATES = "/api/admin/release-plan-templates"
ON_FLAG = "/api/admin/projects/{project}/features/{name}/environments/{environment}"
PLANS = ON_FLAG + "/release-plans"
PLAN = PLANS + "/{plan}"


def _milestones(bodies: tuple[MilestoneBody, ...]) -> list[Milestone]:
    return [
        Milestone(
            "",
            body.name,
            body.sort_order,
            body.strategies,
            None
            if body.transition_condition is None
            else body.transition_condition.interval_minutes,
        )
        for body in bodies
    ]


def _where(request: web.Request) -> tuple[str, str, str]:
    info = request.match_info
    return info["project"], info["name"], info["environment"]


@routes.get(TEMPLATES)
@documented({200: tuple[ReleasePlanTemplateAnswer, ...]})
async def list_release_plan_templates(request: web.Request) -> web.Response:
    """Templates not archived, oldest first."""
    found = await call(request, service(request).release_templates.list_release_plan_templates)
    return web.json_response([write_answer(ReleasePlanTemplateAnswer.of(t)) for t in found])


@routes.post(TEMPLATES)
@documented({201: ReleasePlanTemplateAnswer}, body=ReleasePlanTemplateBody, errors=(409,))
async def create_release_plan_template(request: web.Request) -> web.Response:
    body = await read_body(request, ReleasePlanTemplateBody)
    made = await call(
        request,
        service(request).release_templates.create_release_plan_template,
        body.name,
        body.description,
        _milestones(body.milestones),
        actor=actor(request),
    )
    return answered(ReleasePlanTemplateAnswer.of(made), status=201)


@routes.get(TEMPLATES + "/{template}")
@documented({200: ReleasePlanTemplateAnswer})
async def get_release_plan_template(request: web.Request) -> web.Response:
    found = await call(
        request,
        service(request).release_templates.get_release_plan_template,
        request.match_info["template"],
    )
    return answered(ReleasePlanTemplateAnswer.of(found))


@routes.put(TEMPLATES + "/{template}")
@documented({200: ReleasePlanTemplateAnswer}, body=ReleasePlanTemplateBody, errors=(409,))
async def update_release_plan_template(request: web.Request) -> web.Response:
    body = await read_body(request, ReleasePlanTemplateBody)
    updated = await call(
        request,
        service(request).release_templates.update_release_plan_template,
        request.match_info["template"],
        body.name,
        body.description,
        _milestones(body.milestones),
        actor=actor(request),
    )
    return answered(ReleasePlanTemplateAnswer.of(updated))


@routes.delete(TEMPLATES + "/{template}")
@documented({200: None})
async def delete_release_plan_template(request: web.Request) -> web.Response:
    await call(
        request,
        service(request).release_templates.delete_release_plan_template,
        request.match_info["template"],
        actor=actor(request),
    )
    return web.Response(status=200)


@routes.post(TEMPLATES + "/archive/{template}")
@documented({200: None})
async def archive_release_plan_template(request: web.Request) -> web.Response:
    await call(
        request,
        service(request).release_templates.archive_release_plan_template,
        request.match_info["template"],
        actor=actor(request),
    )
    return web.Response(status=200)


@routes.get(PLANS)
@documented({200: tuple[ReleasePlanAnswer, ...]})
async def list_release_plans(request: web.Request) -> web.Response:
    """The flag's plans in the environment (Unleash's frontend reads them from the flag's
    environments; flagcore answers them here)."""
    found = await call(request, service(request).release_plans.release_plans_of, *_where(request))
    return web.json_response([write_answer(ReleasePlanAnswer.of(p)) for p in found])


@routes.post(PLANS)
@documented({200: ReleasePlanAnswer}, body=TemplateIdBody, errors=(409,))
async def add_release_plan(request: web.Request) -> web.Response:
    body = await read_body(request, TemplateIdBody)
    plan = await call(
        request,
        service(request).release_plans.add_release_plan,
        *_where(request),
        body.template_id,
        actor=actor(request),
    )
    return answered(ReleasePlanAnswer.of(plan))


@routes.delete(PLAN)
@documented({200: None})
async def remove_release_plan(request: web.Request) -> web.Response:
    await call(
        request,
        service(request).release_plans.remove_release_plan,
        *_where(request),
        request.match_info["plan"],
        actor=actor(request),
    )
    return web.Response(status=200)


@routes.post(PLAN + "/milestones/{milestone}/start")
@documented({200: ReleasePlanAnswer}, errors=(409,))
async def start_release_plan_milestone(request: web.Request) -> web.Response:
    plan = await call(
        request,
        service(request).release_plans.start_release_plan_milestone,
        *_where(request),
        request.match_info["plan"],
        request.match_info["milestone"],
        actor=actor(request),
    )
    return answered(ReleasePlanAnswer.of(plan))


@routes.put(ON_FLAG + "/progressions/{milestone}")
@documented({200: ReleasePlanAnswer}, body=ProgressionBody)
async def change_milestone_progression(request: web.Request) -> web.Response:
    body = await read_body(request, ProgressionBody)
    plan = await call(
        request,
        service(request).release_plans.change_milestone_progression,
        *_where(request),
        request.match_info["milestone"],
        body.target_milestone,
        body.transition_condition.interval_minutes,
        actor=actor(request),
    )
    return answered(ReleasePlanAnswer.of(plan))


@routes.delete(ON_FLAG + "/progressions/{milestone}")
@documented({200: None})
async def delete_milestone_progression(request: web.Request) -> web.Response:
    await call(
        request,
        service(request).release_plans.delete_milestone_progression,
        *_where(request),
        request.match_info["milestone"],
        actor=actor(request),
    )
    return web.Response(status=200)


@routes.post(ON_FLAG + "/progressions/{plan}/resume")
@documented({200: ReleasePlanAnswer}, errors=(409,))
async def resume_milestone_progressions(request: web.Request) -> web.Response:
    plan = await call(
        request,
        service(request).release_plans.resume_milestone_progressions,
        *_where(request),
        request.match_info["plan"],
        actor=actor(request),
    )
    return answered(ReleasePlanAnswer.of(plan))


@routes.put(PLAN + "/safeguards")
@documented({200: ReleasePlanAnswer}, body=SafeguardBody)
async def put_release_plan_safeguard(request: web.Request) -> web.Response:
    body = await read_body(request, SafeguardBody)
    metric = body.impact_metric
    safeguard = checked_safeguard(
        metric.metric_name,
        metric.aggregation_mode,
        body.trigger_condition.operator,
        body.trigger_condition.threshold,
        metric.window_minutes,
        time_range=metric.time_range,
        label_selectors=metric.label_selectors,
        action=body.action.type if body.action else "pausePlan",
        ratio_of=metric.ratio_of,
    )
    plan = await call(
        request,
        service(request).release_plans.put_release_plan_safeguard,
        *_where(request),
        request.match_info["plan"],
        safeguard,
        actor=actor(request),
    )
    return answered(ReleasePlanAnswer.of(plan))


@routes.delete(PLAN + "/safeguards/{safeguard}")
@documented({200: ReleasePlanAnswer})
async def delete_release_plan_safeguard(request: web.Request) -> web.Response:
    plan = await call(
        request,
        service(request).release_plans.delete_release_plan_safeguard,
        *_where(request),
        request.match_info["plan"],
        request.match_info["safeguard"],
        actor=actor(request),
    )
    return answered(ReleasePlanAnswer.of(plan))


@routes.post(ON_FLAG + "/impact-metrics")
@documented({202: None}, body=ImpactMetricsBody)
async def post_impact_metrics(request: web.Request) -> web.Response:
    """flagcore's own: an operator's (a monitoring system's) samples for this flag, in
    the shape SDKs send them; labels are not needed (the path names the flag)."""
    body = await read_body(request, ImpactMetricsBody)
    metrics = read_impact_metrics(list(body.impact_metrics))
    await call(
        request,
        service(request).impact_metrics.post_impact_metrics,
        *_where(request),
        metrics,
        actor=actor(request),
    )
    return web.Response(status=202)


@routes.get(ON_FLAG + "/impact-metrics/{metric}")
@documented(
    {200: tuple[ImpactPointAnswer, ...]},
    query={"minutes": Parameter(shapes.whole(1, 1440), "how far back (60 unless given)")},
)
async def impact_points(request: web.Request) -> web.Response:
    """flagcore's own: one impact metric of the flag there, a point a minute, oldest
    first, over the last ``minutes`` (kept a day)."""
    minutes = query_int(request, "minutes", 60, 1, 1440) or 60
    points = await call(
        request,
        service(request).impact_metrics.impact_points,
        *_where(request),
        request.match_info["metric"],
        minutes=minutes,
    )
    return web.json_response([write_answer(ImpactPointAnswer.of(p)) for p in points])
