"""Unleash's playground API: every flag evaluated and explained for a context.

The answers are built in `flagcore.service.playground`; these handlers read the body
(strict JSON, size-limited, into the closed body classes of `flagcore_http.wire`), hold
it to the playground's rules (`check_request`), read the flags on the store worker, and
evaluate them on another thread: up to 15,000 evaluations (seconds) must not hold up the
one thread that serves every SDK's cache miss and every write.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from flagcore.explain import ExplainedIn
from flagcore.service.playground import Playground, advanced_answer, answer, check_request
from flagcore.wire import AdvancedPlaygroundAnswer, PlaygroundAnswer, write_answer
from flagcore_http.answering import answered
from flagcore_http.bodies import read_body, read_json, structure_body
from flagcore_http.calls import call, service
from flagcore_http.contract import documented
from flagcore_http.wire import AdvancedPlaygroundBody, ExplainBody, PlaygroundBody, every_project

__all__ = ["routes"]

routes = web.RouteTableDef()


async def _answered(value: PlaygroundAnswer | AdvancedPlaygroundAnswer) -> web.Response:
    """Written off the event loop too: an advanced answer can hold 15,000 results."""
    return web.json_response(await asyncio.to_thread(write_answer, value))


def _playground(request: web.Request) -> Playground:
    current = service(request)
    return Playground(current.context, current.client)


@routes.post("/api/admin/playground")
@documented({200: PlaygroundAnswer}, body=PlaygroundBody)
async def playground(request: web.Request) -> web.Response:
    data = await read_json(request)  # answered back as the input
    body = structure_body(data, PlaygroundBody)
    checked = check_request((body.environment,), every_project(body.projects), body.context)
    read = await call(request, _playground(request).read, checked)
    features = await asyncio.to_thread(answer, read, checked)
    return await _answered(PlaygroundAnswer(data, features))


@routes.post("/api/admin/playground/advanced")
@documented({200: AdvancedPlaygroundAnswer}, body=AdvancedPlaygroundBody)
async def advanced_playground(request: web.Request) -> web.Response:
    data = await read_json(request)  # answered back as the input
    body = structure_body(data, AdvancedPlaygroundBody)
    checked = check_request(
        body.environments,
        every_project(body.projects),
        body.context,
        advanced=True,
        order=tuple(data["context"]),  # combined in the order sent, as Unleash does
    )
    read = await call(request, _playground(request).read, checked)
    features = await asyncio.to_thread(advanced_answer, read, checked)
    return await _answered(AdvancedPlaygroundAnswer(data, features))


@routes.post("/api/admin/playground/explain")
@documented({200: ExplainedIn}, body=ExplainBody, errors=(404,))
async def explain_flag(request: web.Request) -> web.Response:
    """flagcore's own: `Engine.explain` of one flag (what ``flagcore explain --url`` shows
    with an admin token, which the client API does not take)."""
    body = await read_body(request, ExplainBody)
    checked = check_request((body.environment,), None, body.context, required=())
    explanation = await call(request, _playground(request).explain, body.flag, checked)
    return answered(ExplainedIn(checked.environments[0], explanation))
