"""Change requests (issue 30) in Unleash's (enterprise) admin API shape, as its open-source
frontend calls it (``useChangeRequestApi``, the ``useChangeRequest*`` getters): the config
per environment, drafts, one request, the project's list and pending ones, state changes,
title, comments, reviewers, and editing or discarding a change. Who may do what is the
service's rule; a change's payload is read by the service, with its JSON paths."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from flagcore.change_requests import ChangeRequest
from flagcore.errors import ErrorDetail, InvalidInput
from flagcore.principals import Principal
from flagcore.service import ChangeRequestView, DraftChange
from flagcore.wire import (
    ActionableChangeRequestsAnswer,
    AvailableReviewersAnswer,
    ChangeRequestAnswer,
    ChangeRequestConfigAnswer,
    ChangeRequestPreviewAnswer,
    ChangeRequestsCountAnswer,
    ScheduledChangeRequestAnswer,
    write_answer,
)
from flagcore_http import shapes
from flagcore_http.answering import answered
from flagcore_http.bodies import int_parameter, read_body, read_json, structure_body
from flagcore_http.calls import actor, call, service
from flagcore_http.context_sampling import flush_context_samples
from flagcore_http.contract import Parameter, documented
from flagcore_http.preview_scoring import scored_in_turn
from flagcore_http.routes.personal_tokens import expiry_of
from flagcore_http.wire import (
    ChangeBody,
    ChangeCommentBody,
    ChangeRequestConfigBody,
    ChangeReviewersBody,
    ChangeStateBody,
    ChangeTitleBody,
)

__all__ = ["moved", "routes"]

routes = web.RouteTableDef()

PROJECT = "/api/admin/projects/{project}"
IN_ENVIRONMENT = PROJECT + "/environments/{environment}/change-requests"
REQUESTS = PROJECT + "/change-requests"
ONE = REQUESTS + "/{id}"
_ID = {"id": shapes.ID}
_CHANGE = {"id": shapes.ID, "changeId": shapes.ID}


async def moved(
    request: web.Request,
    who: Principal,
    project: str,
    request_id: int,
    state: str,
    *,
    comment: str | None = None,
    scheduled_at: str | None = None,
) -> ChangeRequest:
    """Unleash's ``{state}`` as the service's transition of that name (the API's state
    route and the UI's buttons)."""
    parts = service(request).change_requests
    if state == "In review":
        return await call(request, parts.submit_change_request, project, request_id, actor=who)
    if state == "Approved":
        return await call(
            request, parts.approve_change_request, project, request_id, comment=comment, actor=who
        )
    if state == "Rejected":
        return await call(
            request, parts.reject_change_request, project, request_id, comment=comment, actor=who
        )
    if state == "Cancelled":
        return await call(request, parts.cancel_change_request, project, request_id, actor=who)
    if state == "Applied":
        return await call(request, parts.apply_change_request, project, request_id, actor=who)
    if state == "Scheduled":
        if not scheduled_at:
            raise InvalidInput(
                "a schedule needs its time",
                [ErrorDetail("required field missing", "$.scheduledAt")],
            )
        at = expiry_of(scheduled_at, "$.scheduledAt")
        return await call(
            request, parts.schedule_change_request, project, request_id, at, actor=who
        )
    raise InvalidInput(
        f"a change request cannot be put in state {state!r}",
        [
            ErrorDetail(
                "expected In review, Approved, Rejected, Cancelled, Applied or Scheduled",
                "$.state",
            )
        ],
    )


def _answers(views: list[ChangeRequestView]) -> web.Response:
    return web.json_response(
        [write_answer(ChangeRequestAnswer.of(v.request, v.conflicts)) for v in views]
    )


def _draft_changes(data: Any) -> list[DraftChange]:
    """One change or a list of them, each read as `ChangeBody` (paths ``$`` or ``$[i]``)."""
    if isinstance(data, list):
        items = [(item, f"$[{index}]") for index, item in enumerate(data)]
    else:
        items = [(data, "$")]
    changes = []
    for item, path in items:
        if not isinstance(item, dict):
            raise InvalidInput("a change is a JSON object", [ErrorDetail("not an object", path)])
        try:
            body = structure_body(item, ChangeBody)
        except InvalidInput as exc:
            details = [ErrorDetail(d.message, path + (d.path or "$")[1:]) for d in exc.details]
            raise InvalidInput(exc.message, details) from exc
        changes.append(DraftChange(body.feature, body.action, body.payload, path))
    return changes


@routes.get(REQUESTS + "/config")
@documented({200: tuple[ChangeRequestConfigAnswer, ...]})
async def change_request_config(request: web.Request) -> web.Response:
    rows = await call(
        request,
        service(request).change_requests.change_request_config,
        request.match_info["project"],
    )
    return web.json_response(
        [
            write_answer(
                ChangeRequestConfigAnswer(r.environment, r.type, r.enabled, r.required_approvals)
            )
            for r in rows
        ]
    )


@routes.put(IN_ENVIRONMENT + "/config")
@documented({204: None}, body=ChangeRequestConfigBody)
async def set_change_request_config(request: web.Request) -> web.Response:
    body = await read_body(request, ChangeRequestConfigBody)
    await call(
        request,
        service(request).change_requests.set_change_request_config,
        request.match_info["project"],
        request.match_info["environment"],
        enabled=body.change_requests_enabled,
        required_approvals=body.required_approvals,
        actor=actor(request),
    )
    return web.Response(status=204)


@routes.post(IN_ENVIRONMENT)
@documented({200: ChangeRequestAnswer}, body=ChangeBody, errors=(409,))
async def add_changes(request: web.Request) -> web.Response:
    changes = _draft_changes(await read_json(request))
    draft = await call(
        request,
        service(request).change_requests.add_changes,
        request.match_info["project"],
        request.match_info["environment"],
        changes,
        actor=actor(request),
    )
    return answered(ChangeRequestAnswer.of(draft))


@routes.get(REQUESTS)
@documented({200: tuple[ChangeRequestAnswer, ...]})
async def list_change_requests(request: web.Request) -> web.Response:
    views = await call(
        request,
        service(request).change_requests.list_change_requests,
        request.match_info["project"],
    )
    return _answers(views)


@routes.get(REQUESTS + "/pending")
@documented({200: tuple[ChangeRequestAnswer, ...]})
async def pending_change_requests(request: web.Request) -> web.Response:
    views = await call(
        request,
        service(request).change_requests.open_change_requests,
        request.match_info["project"],
        actor(request),
    )
    return _answers(views)


@routes.get(REQUESTS + "/pending/{feature}")
@documented({200: tuple[ChangeRequestAnswer, ...]})
async def pending_change_requests_of_flag(request: web.Request) -> web.Response:
    views = await call(
        request,
        service(request).change_requests.open_change_requests,
        request.match_info["project"],
        actor(request),
        feature=request.match_info["feature"],
    )
    return _answers(views)


@routes.get(REQUESTS + "/count")
@documented({200: ChangeRequestsCountAnswer})
async def count_change_requests(request: web.Request) -> web.Response:
    counts = await call(
        request,
        service(request).change_requests.change_request_counts,
        request.match_info["project"],
    )
    return answered(ChangeRequestsCountAnswer.of(counts))


@routes.get(REQUESTS + "/actionable")
@documented({200: ActionableChangeRequestsAnswer})
async def actionable_change_requests(request: web.Request) -> web.Response:
    total = await call(
        request,
        service(request).change_requests.actionable_change_requests,
        request.match_info["project"],
        actor(request),
    )
    return answered(ActionableChangeRequestsAnswer(total))


@routes.get(REQUESTS + "/scheduled")
@documented(
    {200: tuple[ScheduledChangeRequestAnswer, ...]},
    query={"feature": Parameter({"type": "string"}, "only those changing this flag", True)},
)
async def scheduled_change_requests(request: web.Request) -> web.Response:
    found = await call(
        request,
        service(request).change_requests.scheduled_change_requests,
        request.match_info["project"],
        request.query.getall("feature", []),
    )
    return web.json_response(
        [write_answer(ScheduledChangeRequestAnswer(r.id, r.environment, r.title)) for r in found]
    )


@routes.get(REQUESTS + "/available-reviewers/{environment}")
@documented({200: AvailableReviewersAnswer})
async def available_reviewers(request: web.Request) -> web.Response:
    users = await call(
        request,
        service(request).change_requests.available_reviewers,
        request.match_info["project"],
        request.match_info["environment"],
    )
    return answered(AvailableReviewersAnswer.of(users))


@routes.get(ONE)
@documented({200: ChangeRequestAnswer}, path=_ID)
async def get_change_request(request: web.Request) -> web.Response:
    view = await call(
        request,
        service(request).change_requests.get_change_request,
        request.match_info["project"],
        int_parameter(request, "id"),
    )
    return answered(ChangeRequestAnswer.of(view.request, view.conflicts))


@routes.get(ONE + "/preview")
@documented({200: ChangeRequestPreviewAnswer}, path=_ID, errors=(409,))
async def preview_change_request(request: web.Request) -> web.Response:
    """flagcore's own: per flag of the request, what all its changes would do to the
    environment's sampled contexts (off → on, on → off, variant moves); read on the store
    worker (the changes tried and rolled back), scored on another thread."""
    await flush_context_samples(request.app)
    read = await call(
        request,
        service(request).change_request_previews.change_request_preview_input,
        request.match_info["project"],
        int_parameter(request, "id"),
    )
    return answered(await scored_in_turn(request.app, read.scored))


@routes.delete(ONE)
@documented({204: None}, path=_ID, errors=(409,))
async def discard_draft(request: web.Request) -> web.Response:
    await call(
        request,
        service(request).change_requests.discard_draft,
        request.match_info["project"],
        int_parameter(request, "id"),
        actor=actor(request),
    )
    return web.Response(status=204)


@routes.put(ONE + "/state")
@documented({200: ChangeRequestAnswer}, body=ChangeStateBody, path=_ID, errors=(409,))
async def change_state(request: web.Request) -> web.Response:
    body = await read_body(request, ChangeStateBody)
    done = await moved(
        request,
        actor(request),
        request.match_info["project"],
        int_parameter(request, "id"),
        body.state,
        comment=body.comment,
        scheduled_at=body.scheduled_at,
    )
    return answered(ChangeRequestAnswer.of(done))


@routes.put(ONE + "/title")
@documented({204: None}, body=ChangeTitleBody, path=_ID, errors=(409,))
async def set_title(request: web.Request) -> web.Response:
    body = await read_body(request, ChangeTitleBody)
    await call(
        request,
        service(request).change_requests.set_change_request_title,
        request.match_info["project"],
        int_parameter(request, "id"),
        body.title,
        actor=actor(request),
    )
    return web.Response(status=204)


@routes.post(ONE + "/comments")
@documented({201: ChangeRequestAnswer}, body=ChangeCommentBody, path=_ID)
async def add_comment(request: web.Request) -> web.Response:
    body = await read_body(request, ChangeCommentBody)
    done = await call(
        request,
        service(request).change_requests.comment_change_request,
        request.match_info["project"],
        int_parameter(request, "id"),
        body.text,
        actor=actor(request),
    )
    return answered(ChangeRequestAnswer.of(done), status=201)


@routes.put(ONE + "/approvers")
@documented({204: None}, body=ChangeReviewersBody, path=_ID, errors=(409,))
async def set_reviewers(request: web.Request) -> web.Response:
    body = await read_body(request, ChangeReviewersBody)
    await call(
        request,
        service(request).change_requests.set_change_request_reviewers,
        request.match_info["project"],
        int_parameter(request, "id"),
        body.reviewers,
        actor=actor(request),
    )
    return web.Response(status=204)


@routes.put(ONE + "/changes/{changeId}")
@documented({200: ChangeRequestAnswer}, body=ChangeBody, path=_CHANGE, errors=(409,))
async def edit_change(request: web.Request) -> web.Response:
    data = await read_json(request)
    if not isinstance(data, dict):
        raise InvalidInput("the body must be one change", [ErrorDetail("not an object", "$")])
    [change] = _draft_changes(data)
    done = await call(
        request,
        service(request).change_requests.edit_change,
        request.match_info["project"],
        int_parameter(request, "id"),
        int_parameter(request, "changeId"),
        change,
        actor=actor(request),
    )
    return answered(ChangeRequestAnswer.of(done))


@routes.delete(ONE + "/changes/{changeId}")
@documented({204: None}, path=_CHANGE, errors=(409,))
async def discard_change(request: web.Request) -> web.Response:
    await call(
        request,
        service(request).change_requests.discard_change,
        request.match_info["project"],
        int_parameter(request, "id"),
        int_parameter(request, "changeId"),
        actor=actor(request),
    )
    return web.Response(status=204)
