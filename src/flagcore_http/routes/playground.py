"""Unleash's playground API: every flag evaluated and explained for a context.

The answers are built in `flagcore.service.playground`; these handlers read the body
(strict JSON, size-limited), read the flags on the store worker, and evaluate them on
another thread: up to 15,000 evaluations (seconds) must not hold up the one thread that
serves every SDK's cache miss and every write.
"""

from __future__ import annotations

import asyncio

from aiohttp import web

from flagcore.explain import ExplainedIn
from flagcore.service.playground import Playground, advanced_answer, answer
from flagcore.wire import AdvancedPlaygroundAnswer, PlaygroundAnswer, write_answer
from flagcore_http import shapes
from flagcore_http.answering import answered
from flagcore_http.bodies import read_json
from flagcore_http.calls import call, service
from flagcore_http.contract import documented
from flagcore_http.playground_bodies import (
    read_advanced_request,
    read_explain_request,
    read_request,
)

__all__ = ["routes"]

routes = web.RouteTableDef()


async def _answered(value: PlaygroundAnswer | AdvancedPlaygroundAnswer) -> web.Response:
    """Written off the event loop too: an advanced answer can hold 15,000 results."""
    return web.json_response(await asyncio.to_thread(write_answer, value))


def _playground(request: web.Request) -> Playground:
    current = service(request)
    return Playground(current.context, current.client)


@routes.post("/api/admin/playground")
@documented({200: PlaygroundAnswer}, body=shapes.PLAYGROUND_BODY)
async def playground(request: web.Request) -> web.Response:
    body = await read_json(request)
    checked = read_request(body)
    data = await call(request, _playground(request).read, checked)
    features = await asyncio.to_thread(answer, data, checked)
    return await _answered(PlaygroundAnswer(body, features))


@routes.post("/api/admin/playground/advanced")
@documented({200: AdvancedPlaygroundAnswer}, body=shapes.ADVANCED_PLAYGROUND_BODY)
async def advanced_playground(request: web.Request) -> web.Response:
    body = await read_json(request)
    checked = read_advanced_request(body)
    data = await call(request, _playground(request).read, checked)
    features = await asyncio.to_thread(advanced_answer, data, checked)
    return await _answered(AdvancedPlaygroundAnswer(body, features))


@routes.post("/api/admin/playground/explain")
@documented({200: ExplainedIn}, body=shapes.EXPLAIN_BODY, errors=(404,))
async def explain_flag(request: web.Request) -> web.Response:
    """flagcore's own: `Engine.explain` of one flag (what ``flagcore explain --url`` shows
    with an admin token, which the client API does not take)."""
    flag, checked = read_explain_request(await read_json(request))
    explanation = await call(request, _playground(request).explain, flag, checked)
    return answered(ExplainedIn(checked.environments[0], explanation))
