"""Live updates for SDKs: ``/api/client/streaming`` (SSE) and ``/api/client/delta``.

Both take the client token's scope exactly as ``/api/client/features`` does, and speak
format 2 (strategies name segment ids; segments travel beside the flags). See
docs/streaming.md for the events and the settings.
"""

from __future__ import annotations

import asyncio
import contextlib
import json

from aiohttp import web

from flagcore.errors import ErrorDetail, InvalidInput
from flagcore_http import shapes
from flagcore_http.contract import documented
from flagcore_http.keys import TOKEN
from flagcore_http.metrics import with_request_id
from flagcore_http.routes.client import sdk_scope
from flagcore_http.streaming import HUB, StreamConnection, sse
from flagcore_http.streaming_events import Scope, parse_event_id

__all__ = ["routes"]

routes = web.RouteTableDef()

_SSE_HEADERS = {
    "Content-Type": "text/event-stream; charset=utf-8",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",  # proxies must pass each event on at once
}
# A stream that cannot be written for this long belongs to a client that stopped reading.
WRITE_TIMEOUT_S = 10.0


@routes.get("/api/client/streaming")
@documented(
    {200: shapes.STRING}, media="text/event-stream", query=shapes.SDK_SCOPE_QUERY, errors=(400,)
)
async def streaming(request: web.Request) -> web.StreamResponse:
    if request.body_exists:
        # A stream never reads its request: a body would sit unread for hours.
        raise InvalidInput(
            "/api/client/streaming takes no request body", [ErrorDetail("no body expected", "$")]
        )
    hub = request.app[HUB]
    environment, projects = sdk_scope(request)
    response = web.StreamResponse(headers=_SSE_HEADERS)
    with_request_id(request, response)  # observe (issue 18 §2)
    if not hub.admits():
        # Unleash's hint: the SDK falls back to polling (the Node SDK at once).
        await response.prepare(request)
        await response.write(sse("fetch-mode", "polling"))
        await response.write_eof()
        return response
    feed = await hub.feed(environment)
    await hub.sync()
    token = request.get(TOKEN)
    connection = StreamConnection(
        environment,
        Scope.of(projects),
        token.secret_hash if token is not None else None,
        hub.settings.buffer_events,
    )
    # Registered and greeted with no await between: no change can fall in the gap.
    hub.open(feed, connection)
    first = feed.connect_message(
        parse_event_id(request.headers.get("Last-Event-ID")), connection.scope
    )
    keepalive = hub.settings.keepalive
    try:
        await response.prepare(request)
        if first is not None:
            await _write(response, first)
        else:
            await _write(response, b": up to date\n\n")
        while True:
            try:
                # asyncio.timeout, not wait_for: no extra task per wait, which matters
                # when one change wakes thousands of streams.
                async with asyncio.timeout(keepalive):
                    message = await connection.queue.get()
            except TimeoutError:
                message = b": keep-alive\n\n"
            if message is None:
                break
            await _write(response, message)
        with contextlib.suppress(ConnectionError):
            await response.write_eof()
    except (ConnectionError, TimeoutError):
        pass  # the client went away or stopped reading; nothing to tell it
    finally:
        hub.forget(feed, connection)
    return response


async def _write(response: web.StreamResponse, message: bytes) -> None:
    async with asyncio.timeout(WRITE_TIMEOUT_S):
        await response.write(message)


@routes.get("/api/client/delta")
@documented({200: shapes.DELTA, 304: None}, query=shapes.SDK_SCOPE_QUERY)
async def delta(request: web.Request) -> web.Response:
    hub = request.app[HUB]
    environment, projects = sdk_scope(request)
    feed = await hub.feed(environment)
    await hub.sync()
    scope = Scope.of(projects)
    history = feed.history
    known = parse_event_id(request.headers.get("If-None-Match"))
    if history.can_resume(known):
        assert known is not None
        events = history.since(known, scope)
        if not events:
            return web.Response(status=304, headers={"ETag": f'"{known}"'})
    else:
        events = [history.state.hydration(scope)]
    body = json.dumps({"events": events}, separators=(",", ":"), ensure_ascii=False)
    return web.Response(
        body=body.encode("utf-8"),
        headers={
            "ETag": f'"{events[-1]["eventId"]}"',
            "Content-Type": "application/json; charset=utf-8",
        },
    )
